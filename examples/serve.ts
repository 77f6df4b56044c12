/**
 * Serving an agent over HTTP with Python Lagent's protocol (`POST /chat_completion`, `GET /memory/{session_id}`,
 * `GET /health_check`, and a server-sent-events stream route), then using it from another agent: the remote
 * agent becomes a sub-agent of a local composite through `AsyncHTTPAgentClient`. Python Lagent's own
 * `HTTPAgentClient` can call the same server. Runs on the built-in mock model, or on a real endpoint when
 * OPENAI_API_KEY / OPENAI_BASE_URL is set. Needs the optional peer `fastify`: `npm install fastify`.
 */
import { AgentMessage, AsyncAgent, type AsyncForwardOptions, AsyncStreamingAgent } from 'lagent-ts';
import { AsyncHTTPAgentClient, HTTPAgentServer } from 'lagent-ts/distributed';
import { describeModel, pickAsyncLLM } from './shared/model';
import { heading, isMain, show } from './shared/print';

/** A local agent that asks the remote expert, then reports what it said. */
class Coordinator extends AsyncAgent {
  readonly expert: AsyncHTTPAgentClient;

  constructor(expert: AsyncHTTPAgentClient) {
    super({ name: 'coordinator' });
    this.expert = expert;
  }

  override async forward(messages: AgentMessage[], options: AsyncForwardOptions): Promise<AgentMessage> {
    // A sub-agent call: it inherits this call's abort signal; the turn is stored in the remote agent's memory.
    const answer = await this.expert.call(messages, { sessionId: options.sessionId });
    return new AgentMessage({ sender: this.name, content: `The expert says: ${answer.content}` });
  }
}

export async function main(): Promise<void> {
  heading('Serving an agent over HTTP', describeModel());
  const expert = new AsyncStreamingAgent({
    llm: pickAsyncLLM([
      'HTTP/1.1 keeps connections alive by default.',
      'Server-sent events are plain text: an event line, a data line and a blank line.',
    ]),
    template: 'You are a concise networking expert. Answer in one sentence.',
    name: 'expert',
  });
  // Port 0 picks a free port; host defaults to 127.0.0.1. Add `token` to require a bearer token.
  const server = new HTTPAgentServer({ agent: expert, port: 0 });
  const url = await server.listen();
  console.log(`serving the expert at ${url}`);

  const client = new AsyncHTTPAgentClient({ url, timeout: 60_000 });
  try {
    console.log(`health check: ${(await client.isAlive()) ? 'alive' : 'down'}`);

    heading('The remote agent as a sub-agent');
    const coordinator = new Coordinator(client);
    show('coordinator', await coordinator.call('Does HTTP/1.1 reuse connections?', { sessionId: 1 }));

    heading('Streaming from the remote agent');
    process.stdout.write('expert: ');
    for await (const chunk of client.stream('How are server-sent events framed?', { sessionId: 1 })) {
      process.stdout.write(chunk.delta ?? '');
    }
    process.stdout.write('\n');

    heading('The remote memory (GET /memory/1, Lagent’s state-dict shape)');
    const memory = await client.stateDict(1);
    for (const message of memory.memory ?? []) console.log(`  ${message.sender}: ${String(message.content)}`);
    console.log(`the coordinator's own memory: ${coordinator.memory!.getMemory(1).length} messages`);
  } finally {
    client.close();
    await server.close();
    console.log('server closed');
  }
}

if (isMain(import.meta.url)) await main();
