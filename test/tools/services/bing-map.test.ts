import { ActionStatusCode } from 'lagent-ts';
import { AsyncBINGMap } from 'lagent-ts/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeHttpServer } from '../../helpers/http-server';
import { startFakeBingMaps } from './fakes/bing-maps';
import { GOOD_KEY } from './fakes/keys';
import { transportCases } from './fakes/transport-cases';

let bing: FakeHttpServer;
beforeAll(async () => {
  bing = await startFakeBingMaps();
});
afterAll(async () => {
  await bing.close();
});

const map = (options: ConstructorParameters<typeof AsyncBINGMap>[0] = {}) =>
  new AsyncBINGMap({ apiKey: GOOD_KEY, baseURL: bing.url, ...options });
async function json(promise: Promise<{ state: number; errmsg: string | null; formatResult(): string }>) {
  const result = await promise;
  expect(result.state, result.errmsg ?? '').toBe(ActionStatusCode.SUCCESS);
  return JSON.parse(result.formatResult()) as Record<string, unknown>;
}

describe('AsyncBINGMap', () => {
  it("is a toolkit named BINGMap with Lagent's four APIs", () => {
    const tool = map();
    expect(tool.name).toBe('BINGMap');
    expect([...tool.apis.keys()]).toEqual(['get_distance', 'get_route', 'get_coordinates', 'search_nearby']);
  });

  it('gets the driving distance from Routes/Driving with the waypoints and key in the query', async () => {
    const before = bing.requests.length;
    expect(await json(map().call({ start: 'Seattle', end: 'Redmond' }, 'get_distance'))).toEqual({
      distance: 25.481,
    });
    expect(bing.requests[before]).toMatchObject({
      method: 'GET',
      path: '/Routes/Driving',
      query: { 'wp.0': 'Seattle', 'wp.1': 'Redmond', key: GOOD_KEY },
    });
  });

  it("lists the route's instructions, skipping items without one", async () => {
    expect(await json(map().call({ start: 'Seattle', end: 'Redmond' }, 'get_route'))).toEqual({
      route: ['Depart Seattle', 'Take ramp right onto WA-520 E', 'Arrive at Redmond'],
    });
  });

  it('a place Bing Maps cannot geocode is an error that asks for fuller names', async () => {
    const result = await map().call({ start: 'Atlantis', end: 'Redmond' }, 'get_distance');
    expect(result.state).toBe(ActionStatusCode.HTTP_ERROR);
    expect(result.errmsg).toMatch(
      /^BINGMap: Bing Maps could not use these places \(HTTP 404\); give fuller place names/,
    );
  });

  it('gets coordinates from Locations', async () => {
    const before = bing.requests.length;
    expect(await json(map().call({ location: 'Redmond' }, 'get_coordinates'))).toEqual({
      latitude: 47.67399,
      longitude: -122.12151,
    });
    expect(bing.requests[before]).toMatchObject({
      path: '/Locations',
      query: { query: 'Redmond', key: GOOD_KEY },
    });
    const unknown = await map().call({ location: 'Atlantis' }, 'get_coordinates');
    expect(unknown.state).toBe(ActionStatusCode.SUCCESS);
    expect(unknown.formatResult()).toBe('BINGMap: Bing Maps knows no location named "Atlantis".');
  });

  it('searches nearby a place by name: geocodes it, then LocalSearch within the radius, five places at most', async () => {
    const before = bing.requests.length;
    const found = await json(
      map().call({ search_term: 'coffee', places: 'Seattle', radius: 800 }, 'search_nearby'),
    );
    const [locate, search] = bing.requests.slice(before);
    expect(locate).toMatchObject({ path: '/Locations', query: { query: 'Seattle' } });
    expect(search).toMatchObject({
      path: '/LocalSearch',
      query: { query: 'coffee', userCircularMapView: '47.60357,-122.32945,800', key: GOOD_KEY },
    });
    expect(found.place).toEqual(
      [1, 2, 3, 4, 5].map((index) => ({
        name: `coffee shop ${index}`,
        address: `${index} Pike St, Seattle, WA 98101`,
      })),
    );
  });

  it('searches nearby coordinates, with a radius of 5000 m by default', async () => {
    const before = bing.requests.length;
    await json(map().call({ search_term: 'tea', latitude: 47.6, longitude: -122.3 }, 'search_nearby'));
    expect(bing.requests.slice(before)).toHaveLength(1);
    expect(bing.requests[before]!.query.userCircularMapView).toBe('47.6,-122.3,5000');
  });

  it('says so when nothing is nearby, and passes on a place it cannot find', async () => {
    const none = await map().call({ search_term: 'unicorns', latitude: 1, longitude: 2 }, 'search_nearby');
    expect(none.state).toBe(ActionStatusCode.SUCCESS);
    expect(none.formatResult()).toBe('BINGMap: no "unicorns" was found within 5000 m.');
    const nowhere = await map().call({ search_term: 'coffee', places: 'Atlantis' }, 'search_nearby');
    expect(nowhere.formatResult()).toMatch(/knows no location named "Atlantis"/);
  });

  it('an error reported in the response container is an API_ERROR with its details', async () => {
    bing.queue({
      status: 200,
      json: {
        authenticationResultCode: 'ValidCredentials',
        errorDetails: ['The request timed out on the server.'],
        resourceSets: [],
        statusCode: 500,
        statusDescription: 'Internal Server Error',
      },
    });
    const result = await map().call({ location: 'Redmond' }, 'get_coordinates');
    expect(result.state).toBe(ActionStatusCode.API_ERROR);
    expect(result.errmsg).toBe(
      'BINGMap: the request failed (status 500). Bing Maps said: The request timed out on the server.',
    );
  });

  it('answers of the wrong shape are API_ERRORs', async () => {
    bing.queue({ status: 200, json: { statusCode: 200 } });
    const noSets = await map().call({ location: 'Redmond' }, 'get_coordinates');
    expect(noSets.state).toBe(ActionStatusCode.API_ERROR);
    expect(noSets.errmsg).toMatch(/no resourceSets/);
    bing.queue({
      status: 200,
      json: { statusCode: 200, resourceSets: [{ resources: [{ name: 'x', point: {} }] }] },
    });
    const noPoint = await map().call({ location: 'Redmond' }, 'get_coordinates');
    expect(noPoint.state).toBe(ActionStatusCode.API_ERROR);
    expect(noPoint.errmsg).toMatch(/no point coordinates/);
  });
});

describe('AsyncBINGMap over HTTP', () => {
  transportCases({
    name: 'BINGMap',
    environmentVariable: 'BING_MAP_KEY',
    start: startFakeBingMaps,
    call: (options) => new AsyncBINGMap(options).call({ location: 'Seattle' }, 'get_coordinates'),
  });
});
