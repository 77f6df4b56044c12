import {
  type AgentBase,
  type AgentMessage,
  AsyncAgent,
  type AsyncForwardOptions,
  Hook,
  HookError,
} from 'lagent-ts';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { HeldLLM } from '../helpers/held';

describe('AsyncAgent', () => {
  it('resolves to the reply and stores the turn', async () => {
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: ['pong'] }), template: 'sys' });
    const reply = await agent.call('ping');
    expect(reply).toMatchObject({ sender: 'AsyncAgent', content: 'pong', streamState: 0 });
    expect(agent.memory!.getMemory().map((message) => message.content)).toEqual(['ping', 'pong']);
  });

  it('1,000 concurrent sessions keep exactly their own histories', async () => {
    const llm = new AsyncMockLLM({
      latencyMs: 5,
      responses: (messages) =>
        `reply to ${messages.filter((message) => message.role === 'user').length} turns: ${messages.at(-1)?.content}`,
    });
    const agent = new AsyncAgent({ llm });
    const sessions = Array.from({ length: 1_000 }, (_, i) => i);
    await Promise.all(sessions.map((i) => agent.call(`s${i} first`, { sessionId: i })));
    await Promise.all(sessions.map((i) => agent.call(`s${i} second`, { sessionId: i })));
    for (const i of sessions) {
      expect(agent.memory!.getMemory(i).map((message) => message.content)).toEqual([
        `s${i} first`,
        `reply to 1 turns: s${i} first`,
        `s${i} second`,
        `reply to 2 turns: s${i} second`,
      ]);
    }
    expect(agent.memory!.sessions()).toHaveLength(1_000);
  });

  it('accepts sync and async hooks; an async hook that rejects is a HookError and memory is untouched', async () => {
    class AsyncPrefix extends Hook {
      override async beforeAgent(_agent: AgentBase, messages: AgentMessage[]) {
        await new Promise((resolve) => setTimeout(resolve, 1));
        return messages.map((message) => {
          message.content = `async:${message.content}`;
          return message;
        });
      }
    }
    class SyncSuffix extends Hook {
      override afterAgent(_agent: AgentBase, message: AgentMessage) {
        message.content += '!';
      }
    }
    class Rejecting extends Hook {
      override async afterAgent(): Promise<void> {
        throw new Error('nope');
      }
    }
    const agent = new AsyncAgent({
      llm: new AsyncMockLLM({ responses: (messages) => `got ${messages.at(-1)?.content}` }),
      hooks: [new AsyncPrefix(), new SyncSuffix()],
    });
    expect((await agent.call('x')).content).toBe('got async:x!');
    agent.registerHook(new Rejecting());
    const error = await agent.call('y').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(HookError);
    expect((error as HookError).hookName).toBe('Rejecting');
    expect(agent.memory!.getMemory().map((message) => message.content)).toEqual(['async:x', 'got async:x']);
  });

  it('an abort signal cancels the call while the model works and leaves memory as it was', async () => {
    // The model never answers: only the abort can end the call.
    const llm = new HeldLLM({ responses: () => 'late' });
    const agent = new AsyncAgent({ llm });
    const controller = new AbortController();
    const pending = agent.call('hi', { signal: controller.signal });
    await llm.held.until(1);
    controller.abort();
    await expect(pending).rejects.toThrow(/abort/i);
    expect(llm.held.pending).toBe(0);
    expect(agent.memory!.getMemory()).toEqual([]);
    const aborted = AbortSignal.abort();
    await expect(agent.call('x', { signal: aborted })).rejects.toThrow();
  });

  it('composes: a blogger holding a writer and a critic keeps both memories per session', async () => {
    class PrefixedMessageHook extends Hook {
      constructor(
        private readonly prefix: string,
        private readonly senders: string[],
      ) {
        super();
      }
      override beforeAgent(_agent: AgentBase, messages: AgentMessage[]) {
        for (const message of messages) {
          if (this.senders.includes(message.sender)) message.content = this.prefix + message.content;
        }
      }
    }
    const llm = new AsyncMockLLM({
      responses: (messages) => `${messages[0]!.content}#${messages.length}`,
      latencyMs: 1,
    });
    class Blogger extends AsyncAgent {
      writer = new AsyncAgent({ llm, template: 'W', name: 'writer' });
      critic = new AsyncAgent({
        llm,
        template: 'C',
        name: 'critic',
        hooks: [new PrefixedMessageHook('Critique: ', ['writer'])],
      });
      override async forward([message]: AgentMessage[], { sessionId }: AsyncForwardOptions) {
        let current = message!;
        for (let turn = 0; turn < 2; turn++) {
          current = await this.writer.call(current, { sessionId });
          current = await this.critic.call(current, { sessionId });
        }
        return this.writer.call(current, { sessionId });
      }
    }
    const blogger = new Blogger();
    const topics = ['AI', 'Biotech', 'Energy'];
    const replies = await Promise.all(
      topics.map((topic, i) => blogger.call(`Write about ${topic}`, { sessionId: i })),
    );
    expect(replies.map((reply) => reply.sender)).toEqual(['writer', 'writer', 'writer']);
    for (const [i, topic] of topics.entries()) {
      const writer = blogger.stateDict(i)['writer.memory']!;
      const critic = blogger.stateDict(i)['critic.memory']!;
      expect(writer).toHaveLength(6);
      expect(writer[0]!.content).toBe(`Write about ${topic}`);
      expect(critic[0]!.content).toMatch(/^Critique: W#/);
      expect(blogger.stateDict(i).memory!.map((message) => message.content)).toEqual([
        `Write about ${topic}`,
        replies[i]!.content,
      ]);
    }
  });
});
