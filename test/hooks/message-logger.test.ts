import { Agent, MessageLogger } from 'lagent-ts';
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
});
