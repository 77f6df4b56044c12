import { AsyncAgent, ConfigurationError } from 'lagent-ts';
import { AsyncQueueAgent, QueueAgentWorker } from 'lagent-ts/distributed/queue';
import { describe, expect, it, vi } from 'vitest';

// As if bullmq were not installed: importing it fails the way a missing package does.
vi.mock('bullmq', () => {
  throw new Error("Cannot find package 'bullmq'");
});

describe('without bullmq installed', () => {
  it('the queue classes say what to install, when first used', async () => {
    const worker = new QueueAgentWorker({ agent: new AsyncAgent({}), connection: 'redis://127.0.0.1:1' });
    const workerError = await worker.ready().catch((error: unknown) => error);
    expect(workerError).toBeInstanceOf(ConfigurationError);
    expect((workerError as Error).message).toMatch(/^install bullmq and ioredis to use QueueAgentWorker/);
    await worker.close();
    const remote = new AsyncQueueAgent({ connection: 'redis://127.0.0.1:1' });
    const remoteError = await remote.call('hi').catch((error: unknown) => error);
    expect(remoteError).toBeInstanceOf(ConfigurationError);
    expect((remoteError as Error).message).toMatch(/^install bullmq and ioredis to use AsyncQueueAgent/);
    await remote.close();
  });
});
