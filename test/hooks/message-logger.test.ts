import {
  ActionExecutor,
  ActionReturn,
  ActionStatusCode,
  Agent,
  AgentMessage,
  MessageLogger,
  tool,
} from 'lagent-ts';
import { MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';

function sink(isTTY = false) {
  const chunks: string[] = [];
  return { chunks, stream: { isTTY, write: (chunk: string) => chunks.push(chunk) } };
}

describe('MessageLogger', () => {
  it('logs the inputs and the reply with session and sender, without colour off a TTY', () => {
    const { chunks, stream } = sink();
    const agent = new Agent({
      llm: new MockLLM({ responses: ['pong'] }),
      hooks: [new MessageLogger({ stream })],
    });
    agent.call('ping', { sessionId: 'abc' });
    expect(chunks.join('')).toBe('[session abc] user:\nping\n\n[session abc] Agent:\npong\n\n');
  });

  it('colours each sender consistently when asked', () => {
    const { chunks, stream } = sink(true);
    const logger = new MessageLogger({ stream, colors: true, name: 'demo' });
    const agent = new Agent({ llm: new MockLLM({ responses: () => 'pong' }), hooks: [logger] });
    agent.call('a');
    agent.call('b');
    const headers = chunks.map((chunk) => chunk.split('\n')[0]!);
    const esc = String.fromCharCode(27);
    expect(headers[0]).toMatch(new RegExp(`^${esc}\\[1;\\d+mdemo \\[session 0\\] user:${esc}\\[0m$`));
    expect(headers[0]!.slice(0, 8)).toBe(headers[2]!.slice(0, 8));
    expect(headers[1]).toContain('Agent:');
  });

  it('renders structured content as JSON', () => {
    const { chunks, stream } = sink();
    const agent = new Agent({
      llm: new MockLLM({ responses: ['ok'] }),
      hooks: [new MessageLogger({ stream })],
    });
    agent.call({ content: { name: 'tool', parameters: { x: 1 } } });
    expect(chunks[0]).toContain('"name": "tool"');
  });

  it('logs a failed tool call as its error, as the model sees it', () => {
    const { chunks, stream } = sink();
    const failing = tool({
      name: 'failing',
      run: () => {
        throw new Error('disk full');
      },
    });
    const executor = new ActionExecutor({ actions: [failing], hooks: [new MessageLogger({ stream })] });
    executor.call(new AgentMessage({ sender: 'Agent', content: { name: 'failing', parameters: {} } }));
    expect(chunks[1]).toBe('[session 0] ActionExecutor:\ndisk full\n\n');
    const logger = new MessageLogger({ stream });
    logger.afterAction(
      executor,
      new AgentMessage({ content: new ActionReturn({ state: ActionStatusCode.API_ERROR, errmsg: 'x' }) }),
      1,
    );
    expect(chunks.at(-1)).toBe('[session 1] user:\nx\n\n');
  });

  it('never throws on content JSON cannot write', () => {
    const { chunks, stream } = sink();
    const logger = new MessageLogger({ stream });
    const cyclic = Object.create(null);
    cyclic.self = cyclic;
    cyclic.n = 1n;
    logger.afterAction({} as never, new AgentMessage({ content: cyclic }), 0);
    expect(chunks[0]).toBe('[session 0] user:\n{\n  "self": "[Circular]",\n  "n": 1\n}\n\n');
  });
});
