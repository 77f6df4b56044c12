import { z } from 'zod';
import { AsyncBaseAction } from '../../actions/base-action';
import type { ToolContext } from '../../actions/types';
import { ActionReturn } from '../../schema/action-return';
import { ActionStatusCode } from '../../schema/status';
import { isPlainObject } from '../../utils/is';
import { BridgedTool } from '../bridged-tool';
import type { HttpClient } from './http';
import {
  answerFailure,
  arrayOf,
  bridgedCallTimeout,
  bridgedOptions,
  type ServiceToolOptions,
  serviceClient,
  stringOf,
} from './service-tool';

/** Options of {@link AsyncBINGMap} and {@link BINGMap}. */
export interface BINGMapOptions extends ServiceToolOptions {
  /** A Bing Maps key. @default process.env.BING_MAP_KEY */
  apiKey?: string | undefined;
  /** @default 'https://dev.virtualearth.net/REST/v1' */
  baseURL?: string | undefined;
}

const SETUP = {
  service: 'BINGMap',
  defaultBaseURL: 'https://dev.virtualearth.net/REST/v1',
  environmentVariable: 'BING_MAP_KEY',
};
const DESCRIPTION =
  'Looks up map information with Bing Maps: distances, routes, coordinates and places nearby.';
/** Lagent reports at most five places. */
const MAX_PLACES = 5;

const tripParameters = z.object({
  start: z.string().min(1).describe('The start location'),
  end: z.string().min(1).describe('The end location'),
});
const locationParameters = z.object({
  location: z.string().min(1).describe('The location to find the coordinates of'),
});
const nearbyParameters = z.object({
  search_term: z.string().min(1).describe('What to look for, e.g. coffee'),
  places: z
    .string()
    .default('unknown')
    .describe("The name of the location to search around; 'unknown' to use latitude and longitude instead"),
  latitude: z.number().default(0).describe('The latitude of the location, when places is unknown'),
  longitude: z.number().default(0).describe('The longitude of the location, when places is unknown'),
  radius: z.number().int().positive().default(5000).describe('The radius of the search, in meters'),
});

type Resources = { resources: Record<string, unknown>[] } | { failure: ActionReturn };

/**
 * Lagent's BINGMap toolkit on the Bing Maps REST services (`key` in the query):
 *
 * - `get_distance({ start, end })` and `get_route({ start, end })`: `Routes/Driving`, the driving distance in
 *   km and the turn-by-turn instructions;
 * - `get_coordinates({ location })`: `Locations`, latitude and longitude;
 * - `search_nearby({ search_term, places | latitude + longitude, radius })`: `LocalSearch` within the circle,
 *   at most five places with their addresses (a place name is geocoded first).
 *
 * Nothing found is a sentence saying so; failures are `HTTP_ERROR` / `API_ERROR` with a sentence, never thrown.
 * Microsoft retires Bing Maps for Enterprise (basic keys in June 2025, enterprise keys in June 2028).
 *
 * @example
 * const map = new AsyncBINGMap({ apiKey: process.env.BING_MAP_KEY });
 * (await map.call({ location: 'Shanghai' }, 'get_coordinates')).formatResult();
 */
export class AsyncBINGMap extends AsyncBaseAction {
  static override toolApis = {
    get_distance: {
      description: 'Gets the driving distance between two locations, in km.',
      parameters: tripParameters,
    },
    get_route: {
      description: 'Gets the driving route between two locations, as a list of steps.',
      parameters: tripParameters,
    },
    get_coordinates: {
      description: 'Gets the latitude and longitude of a location.',
      parameters: locationParameters,
    },
    search_nearby: {
      description:
        'Searches for places near a location, within a radius; give the location by name (places) or by latitude and longitude.',
      parameters: nearbyParameters,
    },
  };

  readonly #client: HttpClient;

  constructor(options: BINGMapOptions = {}) {
    super({ name: options.name ?? 'BINGMap', description: options.description ?? DESCRIPTION });
    this.#client = serviceClient(options, SETUP);
  }

  async get_distance(
    { start, end }: z.output<typeof tripParameters>,
    context: ToolContext,
  ): Promise<ActionReturn | { distance: number }> {
    const route = await this.#route(start, end, context);
    if (route instanceof ActionReturn) return route;
    const distance = route.travelDistance;
    if (typeof distance !== 'number') return this.#malformed('the route has no travelDistance');
    return { distance };
  }

  async get_route(
    { start, end }: z.output<typeof tripParameters>,
    context: ToolContext,
  ): Promise<ActionReturn | { route: string[] }> {
    const route = await this.#route(start, end, context);
    if (route instanceof ActionReturn) return route;
    const steps: string[] = [];
    for (const leg of arrayOf(route.routeLegs).filter(isPlainObject)) {
      for (const item of arrayOf(leg.itineraryItems).filter(isPlainObject)) {
        const text = isPlainObject(item.instruction) ? stringOf(item.instruction.text) : undefined;
        if (text !== undefined) steps.push(text);
      }
    }
    return { route: steps };
  }

  async get_coordinates(
    { location }: z.output<typeof locationParameters>,
    context: ToolContext,
  ): Promise<ActionReturn | { latitude: number; longitude: number }> {
    const found = await this.#resources('/Locations', { query: location }, context);
    if ('failure' in found) return found.failure;
    const first = found.resources[0];
    if (!first) return this.#nothing(`Bing Maps knows no location named ${JSON.stringify(location)}`);
    const coordinates = isPlainObject(first.point) ? arrayOf(first.point.coordinates) : [];
    const [latitude, longitude] = coordinates;
    if (typeof latitude !== 'number' || typeof longitude !== 'number') {
      return this.#malformed('the location has no point coordinates');
    }
    return { latitude, longitude };
  }

  async search_nearby(
    { search_term, places, latitude, longitude, radius }: z.output<typeof nearbyParameters>,
    context: ToolContext,
  ): Promise<ActionReturn | { place: { name: string; address: string }[] }> {
    let center = { latitude, longitude };
    if (places !== 'unknown') {
      const position = await this.get_coordinates({ location: places }, context);
      if (position instanceof ActionReturn) return position;
      center = position;
    }
    const found = await this.#resources(
      '/LocalSearch',
      { query: search_term, userCircularMapView: `${center.latitude},${center.longitude},${radius}` },
      context,
    );
    if ('failure' in found) return found.failure;
    const place = found.resources.slice(0, MAX_PLACES).map((resource) => {
      const address = isPlainObject(resource.Address)
        ? resource.Address
        : isPlainObject(resource.address)
          ? resource.address
          : {};
      return { name: stringOf(resource.name) ?? '', address: stringOf(address.formattedAddress) ?? '' };
    });
    if (place.length === 0) {
      return this.#nothing(`no ${JSON.stringify(search_term)} was found within ${radius} m`);
    }
    return { place };
  }

  /** Nothing to release (each call is one request or two); present so the sync twin can close it. */
  close(): void {}

  async #route(
    start: string,
    end: string,
    context: ToolContext,
  ): Promise<ActionReturn | Record<string, unknown>> {
    const found = await this.#resources('/Routes/Driving', { 'wp.0': start, 'wp.1': end }, context);
    if ('failure' in found) return found.failure;
    return (
      found.resources[0] ??
      this.#nothing(
        `Bing Maps found no driving route from ${JSON.stringify(start)} to ${JSON.stringify(end)}`,
      )
    );
  }

  /** One request; the resources of its first resource set, or why there are none. */
  async #resources(path: string, query: Record<string, string>, context: ToolContext): Promise<Resources> {
    const client = this.#client;
    const outcome = await client.json({
      path,
      query: { ...query, key: client.apiKey },
      signal: context.signal,
    });
    if (!outcome.ok) {
      const { failure } = outcome;
      if (failure.status === 404 || failure.status === 400) {
        // Bing Maps answers 400 / 404 when a place cannot be found or geocoded, not only for a wrong path.
        return {
          failure: new ActionReturn({
            errmsg: `${this.name}: Bing Maps could not use these places (HTTP ${failure.status}); give fuller place names (city and country), or check baseURL.`,
            state: ActionStatusCode.HTTP_ERROR,
          }),
        };
      }
      return { failure: failure.toActionReturn() };
    }
    const body = outcome.data;
    if (!isPlainObject(body) || !Array.isArray(body.resourceSets)) {
      return { failure: this.#malformed('the answer has no resourceSets') };
    }
    if (typeof body.statusCode === 'number' && body.statusCode !== 200) {
      const details = arrayOf(body.errorDetails).filter((detail) => typeof detail === 'string');
      const said = details.length > 0 ? ` Bing Maps said: ${details.join(' ')}` : '';
      return {
        failure: answerFailure(
          'service-error',
          `${this.name}: the request failed (status ${body.statusCode}).${said}`,
        ),
      };
    }
    const first = body.resourceSets[0];
    if (first === undefined) return { resources: [] };
    if (!isPlainObject(first) || (first.resources !== undefined && !Array.isArray(first.resources))) {
      return { failure: this.#malformed('a resource set has no list of resources') };
    }
    return { resources: arrayOf(first.resources).filter(isPlainObject) };
  }

  #malformed(what: string): ActionReturn {
    return answerFailure(
      'malformed',
      `${this.name}: ${what}; the answer does not look like Bing Maps'; check baseURL.`,
    );
  }

  #nothing(what: string): ActionReturn {
    return new ActionReturn({ result: [{ type: 'text', content: `${this.name}: ${what}.` }] });
  }
}

/**
 * The sync twin of {@link AsyncBINGMap}: the same APIs and results; each call blocks its thread (use the async
 * class inside servers).
 */
export class BINGMap extends BridgedTool {
  constructor(options: BINGMapOptions = {}) {
    super({
      exportName: 'AsyncBINGMap',
      apis: AsyncBINGMap.toolApis,
      options: bridgedOptions(options, SETUP.environmentVariable),
      // search_nearby by place name makes two requests.
      callTimeout: bridgedCallTimeout(options, 2),
      name: options.name ?? 'BINGMap',
      description: options.description ?? DESCRIPTION,
    });
  }
}
