import type { ActionReturn } from 'lagent-ts';
import { ActionStatusCode } from 'lagent-ts';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import type { FakeHttpServer } from '../../../helpers/http-server';
import { recordTimerDelays } from '../../../helpers/timer-delays';
import { GOOD_KEY } from './keys';

/** What the shared transport cases need to know about one tool. */
export interface TransportSubject {
  /** The tool's name, which starts its failure sentences. */
  name: string;
  /** Its usual environment variable for the key. */
  environmentVariable: string;
  /** Starts the tool's fake service. */
  start(): Promise<FakeHttpServer>;
  /** Calls one API of a tool built with these options; resolves to its result. */
  call(options: {
    baseURL: string;
    apiKey?: string | undefined;
    timeout?: number;
    retries?: number;
  }): Promise<ActionReturn>;
}

/**
 * The HTTP behaviour every service tool shares, run against the tool's own fake: a rejected key, rate limits
 * with Retry-After, server errors, a hanging server, a body that is not JSON, and no key at all.
 */
export function transportCases(subject: TransportSubject): void {
  let service: FakeHttpServer;
  beforeAll(async () => {
    service = await subject.start();
  });
  afterAll(async () => {
    await service.close();
  });
  const call = (options: { apiKey?: string | undefined; timeout?: number; retries?: number } = {}) =>
    subject.call({ baseURL: service.url, apiKey: GOOD_KEY, ...options });

  it('a rejected key is an HTTP_ERROR that says how to supply one', async () => {
    const result = await call({ apiKey: 'wrong-key' });
    expect(result.state).toBe(ActionStatusCode.HTTP_ERROR);
    expect(result.errmsg).toMatch(new RegExp(`^${subject.name}: the API key was rejected \\(HTTP 40[13]\\)`));
    expect(result.errmsg).toContain(subject.environmentVariable);
  });

  it('a 403 is a rejected key too', async () => {
    service.queue({ status: 403, json: { error: 'Your account has been deleted.' } });
    const result = await call();
    expect(result.state).toBe(ActionStatusCode.HTTP_ERROR);
    expect(result.errmsg).toMatch(/HTTP 403/);
  });

  it('waits as long as a 429 Retry-After asks, then succeeds', async () => {
    const before = service.requests.length;
    service.queue({ status: 429, json: { error: 'Too many requests' }, headers: { 'retry-after': '1' } });
    const timers = recordTimerDelays();
    const result = await call().finally(() => timers.stop());
    expect(result.state).toBe(ActionStatusCode.SUCCESS);
    expect(service.requests.length - before).toBe(2);
    // It waited the second the server asked for.
    expect(timers.delays).toContain(1000);
  });

  it('does not retry when Retry-After asks for longer than it waits, and says how long', async () => {
    const before = service.requests.length;
    service.queue({
      status: 429,
      json: { error: 'Hourly limit reached' },
      headers: { 'retry-after': '3600' },
    });
    const result = await call();
    expect(service.requests.length - before).toBe(1);
    expect(result.state).toBe(ActionStatusCode.HTTP_ERROR);
    expect(result.errmsg).toMatch(/rate limited \(HTTP 429\).*3600 s/);
  });

  it('retries a 500 and reports it when it persists', async () => {
    const before = service.requests.length;
    service.queue(
      { status: 500, json: { error: 'Internal error' } },
      { status: 503, text: 'Service Unavailable' },
    );
    const result = await call({ retries: 1 });
    expect(service.requests.length - before).toBe(2);
    expect(result.state).toBe(ActionStatusCode.HTTP_ERROR);
    expect(result.errmsg).toMatch(/the service failed \(HTTP 503\) after 2 attempts/);
    // One failure then a success is no failure at all.
    service.queue({ status: 502, text: 'Bad Gateway' });
    expect((await call({ retries: 1 })).state).toBe(ActionStatusCode.SUCCESS);
  });

  it('gives up on a server that does not answer within the timeout', async () => {
    // The server never answers: only the timeout ends the call.
    service.queue({ hang: true });
    const result = await call({ timeout: 300 });
    expect(result.state).toBe(ActionStatusCode.HTTP_ERROR);
    expect(result.errmsg).toMatch(/within 300 ms/);
  });

  it('a body that is not JSON is an API_ERROR', async () => {
    service.queue({ status: 200, text: '<html>captcha</html>' });
    const result = await call();
    expect(result.state).toBe(ActionStatusCode.API_ERROR);
    expect(result.errmsg).toMatch(/not valid JSON/);
  });

  it('without a key nothing is sent, and the answer says which variable to set', async () => {
    vi.stubEnv(subject.environmentVariable, undefined);
    try {
      const before = service.requests.length;
      const result = await call({ apiKey: undefined });
      expect(service.requests.length).toBe(before);
      expect(result.state).toBe(ActionStatusCode.API_ERROR);
      expect(result.errmsg).toBe(
        `${subject.name}: no API key is configured; set ${subject.environmentVariable} or pass apiKey.`,
      );
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it(`takes the key from ${subject.environmentVariable} when none is given`, async () => {
    vi.stubEnv(subject.environmentVariable, GOOD_KEY);
    try {
      expect((await call({ apiKey: undefined })).state).toBe(ActionStatusCode.SUCCESS);
    } finally {
      vi.unstubAllEnvs();
    }
  });
}
