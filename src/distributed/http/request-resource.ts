import type { IncomingMessage } from 'node:http';

/*
 * The `resourceId` of each request, as the server's `resourceId` option derived it from what the application
 * verified (a header, a cookie): the call options of every route that starts a call take it from here, never
 * from a request body.
 */

const resources = new WeakMap<IncomingMessage, string>();

/** Marks a request as made for `resourceId`. */
export function setRequestResource(request: IncomingMessage, resourceId: string): void {
  resources.set(request, resourceId);
}

/** Sets the request's `resourceId` (when the server derived one) on call options made for it. */
export function withRequestResource<T extends Record<string, unknown>>(
  options: T,
  request: IncomingMessage,
): T {
  const resourceId = resources.get(request);
  if (resourceId !== undefined) (options as Record<string, unknown>).resourceId = resourceId;
  return options;
}

/** The request's `resourceId`, when the server derived one. */
export function requestResource(request: IncomingMessage): string | undefined {
  return resources.get(request);
}
