import type { BaseAction } from 'lagent-ts';
import { ActionStatusCode } from 'lagent-ts';
import { BINGMap, GoogleScholar, GoogleSearch } from 'lagent-ts/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as tools from '#src/tools/index';
import { GOOD_KEY } from './fakes/keys';
import { type FakeKind, type FakeServiceWorker, startFakeServiceWorker } from './fakes/service-host';

/** The sync twins host their async class from `lagent-ts/tools`, in the sync bridge's worker. */
const twins: {
  name: string;
  exportName: string;
  fake: FakeKind;
  make: (options: { baseURL: string; apiKey: string }) => BaseAction & { close(): void };
  api: string;
  args: Record<string, unknown>;
  expected: string;
}[] = [
  {
    name: 'GoogleSearch',
    exportName: 'AsyncGoogleSearch',
    fake: 'serper',
    make: (options) => new GoogleSearch(options),
    api: 'run',
    args: { query: 'capital of france' },
    expected: '["Paris"]',
  },
  {
    name: 'GoogleScholar',
    exportName: 'AsyncGoogleScholar',
    fake: 'serpapi',
    make: (options) => new GoogleScholar(options),
    api: 'get_author_id',
    args: { mauthors: 'Ada Author' },
    expected: '{"author_id":"AUTH1"}',
  },
  {
    name: 'BINGMap',
    exportName: 'AsyncBINGMap',
    fake: 'bing-maps',
    make: (options) => new BINGMap(options),
    api: 'get_distance',
    args: { start: 'Seattle', end: 'Redmond' },
    expected: '{"distance":25.481}',
  },
];

for (const twin of twins) {
  describe(`${twin.name} (sync)`, () => {
    let fake: FakeServiceWorker;
    beforeAll(() => {
      fake = startFakeServiceWorker(twin.fake);
    });
    afterAll(() => {
      fake.close();
    });

    it('hosts an async class that lagent-ts/tools exports', () => {
      expect(tools).toHaveProperty(twin.exportName);
    });

    it('answers as its async class does, blocking until the service answers', () => {
      const tool = twin.make({ baseURL: fake.url, apiKey: GOOD_KEY });
      try {
        expect(tool.name).toBe(twin.name);
        const result = tool.call(twin.args, twin.api);
        expect(result.state, result.errmsg ?? '').toBe(ActionStatusCode.SUCCESS);
        expect(result.formatResult()).toBe(twin.expected);
      } finally {
        tool.close();
      }
    });

    it('returns failures as data too', () => {
      const tool = twin.make({ baseURL: fake.url, apiKey: 'wrong-key' });
      try {
        const rejected = tool.call(twin.args, twin.api);
        expect(rejected.state).toBe(ActionStatusCode.HTTP_ERROR);
        expect(rejected.errmsg).toMatch(/the API key was rejected/);
        fake.queue({ status: 200, text: 'not json' });
        expect(tool.call(twin.args, twin.api).state).toBe(ActionStatusCode.API_ERROR);
      } finally {
        tool.close();
      }
    });
  });
}
