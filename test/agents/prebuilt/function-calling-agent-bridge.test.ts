import { type ActionReturn, FunctionCallingAgent, GPTAPI } from 'lagent-ts';
import { startFakeOpenAIWorker } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { calculator } from '../../helpers/tools';

/**
 * The sync FunctionCallingAgent over real HTTP: the sync GPTAPI runs its requests in the sync bridge's worker
 * thread, against a fake server in another worker (a server on this thread could not answer a blocked sync
 * client). Worker threads: an integration test (vitest.config.ts OUT_OF_PROCESS).
 */

describe('FunctionCallingAgent through the sync bridge', () => {
  it('works through the sync GPTAPI (bridge) against a server in a worker', () => {
    const server = startFakeOpenAIWorker({
      script: [{ toolCalls: [{ name: 'Calculator__add', arguments: { a: 2, b: 5 } }] }, 'Seven.'],
    });
    try {
      const llm = new GPTAPI({ model: 'm', baseURL: server.baseURL, apiKey: 'k' });
      const agent = new FunctionCallingAgent({ llm, actions: [calculator] });
      expect(agent.call('2 + 5?').content).toBe('Seven.');
      const results = agent.agent.memory!.getMemory()[2]!.content as ActionReturn[];
      expect(results[0]!.toText()).toBe('7');
      llm.close();
    } finally {
      server.close();
    }
  });
});
