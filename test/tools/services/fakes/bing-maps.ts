import {
  type FakeHttpServer,
  type RecordedRequest,
  type Reply,
  replyWith,
  startFakeHttp,
} from '../../../helpers/http-server';
import { GOOD_KEY } from './keys';

/**
 * The Bing Maps REST services (`/Routes/Driving`, `/Locations`, `/LocalSearch`, `key` in the query) with the
 * documented response container: `authenticationResultCode`, `resourceSets[].resources`, `statusCode`,
 * `statusDescription`, and `errorDetails` on errors.
 */
export function startFakeBingMaps(): Promise<FakeHttpServer> {
  return startFakeHttp(replyWith(answer));
}

const container = (resources: unknown[]) => ({
  authenticationResultCode: 'ValidCredentials',
  brandLogoUri: 'https://dev.virtualearth.net/Branding/logo_powered_by.png',
  copyright: 'Copyright © 2025 Microsoft and its suppliers.',
  resourceSets: [{ estimatedTotal: resources.length, resources }],
  statusCode: 200,
  statusDescription: 'OK',
  traceId: 'trace-1',
});

const failure = (
  statusCode: number,
  statusDescription: string,
  details: string[],
  authentication = 'ValidCredentials',
) => ({
  status: statusCode,
  json: {
    authenticationResultCode: authentication,
    errorDetails: details,
    resourceSets: [],
    statusCode,
    statusDescription,
    traceId: 'trace-2',
  },
});

const PLACES: Record<string, [number, number]> = {
  Seattle: [47.60357, -122.32945],
  Redmond: [47.67399, -122.12151],
};

function answer(request: RecordedRequest): Reply {
  const { key } = request.query;
  if (key !== GOOD_KEY) {
    return failure(
      401,
      'Unauthorized',
      ['Access was denied. You may have entered your credentials incorrectly.'],
      'InvalidCredentials',
    );
  }
  switch (request.path) {
    case '/Routes/Driving': {
      const from = request.query['wp.0'];
      const to = request.query['wp.1'];
      if (!from || !to) return failure(400, 'Bad Request', ['Two waypoints are required.']);
      if (!PLACES[from] || !PLACES[to]) {
        return failure(404, 'Not Found', ['The waypoint could not be geocoded.']);
      }
      return {
        status: 200,
        json: container([
          {
            __type: 'Route:http://schemas.microsoft.com/search/local/ws/rest/v1',
            distanceUnit: 'Kilometer',
            durationUnit: 'Second',
            travelDistance: 25.481,
            travelDuration: 1506,
            routeLegs: [
              {
                travelDistance: 25.481,
                itineraryItems: [
                  {
                    instruction: { maneuverType: 'DepartStart', text: `Depart ${from}` },
                    travelDistance: 0.2,
                  },
                  {
                    instruction: { maneuverType: 'TakeRampRight', text: 'Take ramp right onto WA-520 E' },
                    travelDistance: 20,
                  },
                  { details: [{ maneuverType: 'None' }], travelDistance: 0 },
                  {
                    instruction: { maneuverType: 'ArriveFinish', text: `Arrive at ${to}` },
                    travelDistance: 0,
                  },
                ],
              },
            ],
          },
        ]),
      };
    }
    case '/Locations': {
      const place = PLACES[request.query.query ?? ''];
      if (!place) return { status: 200, json: container([]) };
      return {
        status: 200,
        json: container([
          {
            __type: 'Location:http://schemas.microsoft.com/search/local/ws/rest/v1',
            name: `${request.query.query}, WA`,
            point: { type: 'Point', coordinates: place },
            address: {
              adminDistrict: 'WA',
              countryRegion: 'United States',
              formattedAddress: `${request.query.query}, WA`,
            },
            confidence: 'High',
          },
        ]),
      };
    }
    case '/LocalSearch': {
      if (request.query.query === 'unicorns') return { status: 200, json: container([]) };
      return {
        status: 200,
        json: container(
          Array.from({ length: 7 }, (_, index) => ({
            __type: 'LocalBusiness:http://schemas.microsoft.com/search/local/ws/rest/v1',
            name: `${request.query.query} shop ${index + 1}`,
            point: { type: 'Point', coordinates: [47.6 + index / 100, -122.3] },
            Address: {
              addressLine: `${index + 1} Pike St`,
              adminDistrict: 'WA',
              countryRegion: 'United States',
              formattedAddress: `${index + 1} Pike St, Seattle, WA 98101`,
              locality: 'Seattle',
              postalCode: '98101',
            },
            PhoneNumber: '(206) 555-0100',
            Website: 'https://example.com',
            entityType: 'Cafe',
          })),
        ),
      };
    }
    default:
      return failure(404, 'Not Found', ['The requested resource does not exist.']);
  }
}
