/**
 * A2A both ways. First a lagent-ts agent calls an A2A agent built with `@a2a-js/sdk` alone (sdk-agent.ts)
 * through `AsyncA2AAgent`, as a sub-agent: a plain answer, then a task the remote leaves `input-required`,
 * which stops the local call as an interrupt and is resumed with the text it asked for. Then the SDK's own
 * client calls a lagent-ts agent served by `HTTPAgentServer` (which speaks A2A besides its other protocols):
 * the agent card, a message, and a streamed one. On the scripted mock model unless OPENAI_* is set.
 */
import { randomUUID } from 'node:crypto';
import { type Part, Role, type Task } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';
import {
  type AgentMessage,
  AsyncAgent,
  AsyncStreamingFunctionCallingAgent,
  asyncTool,
  type ForwardOptions,
  interruptsOf,
  resumeWith,
} from 'lagent-ts';
import { AsyncA2AAgent, HTTPAgentServer } from 'lagent-ts/distributed';
import { z } from 'zod';
import { pickAsyncLLM } from '../shared/model';
import { heading, isMain } from '../shared/print';
import { startCurrencyAgent } from './sdk-agent';

/** A local agent whose forward asks the remote currency agent (held in `currency`). */
class Traveller extends AsyncAgent {
  readonly currency: AsyncA2AAgent<string>;

  constructor(url: string) {
    super({ name: 'traveller' });
    this.currency = new AsyncA2AAgent<string>({ url, name: 'currency' });
  }

  override async forward(messages: AgentMessage[], options: ForwardOptions) {
    const answer = await this.currency.call(messages, { sessionId: options.sessionId });
    return `The currency agent says: ${answer.content}`;
  }
}

function text(value: string): Part {
  return { content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

export async function main(): Promise<void> {
  heading('lagent-ts calls an A2A agent of the SDK', 'the remote: examples/a2a/sdk-agent.ts');
  const remote = await startCurrencyAgent();
  const traveller = new Traveller(remote.url);
  const card = await traveller.currency.card();
  console.log(`remote card: ${card.name} (${card.skills.map((skill) => skill.id).join(', ')})`);
  const plain = await traveller.call('100 euros in dollars', { sessionId: 'trip' });
  console.log(`reply: ${plain.content}`);
  const paused = await traveller.call('convert my budget', { sessionId: 'budget' });
  const [ask] = interruptsOf(paused);
  console.log(`paused at ${ask!.path}: ${ask!.toolCall.name}(${JSON.stringify(ask!.toolCall.arguments)})`);
  const done = await traveller.call(
    resumeWith([{ id: ask!.id, approve: true, arguments: { text: '250' } }]),
    {
      sessionId: 'budget',
    },
  );
  console.log(`resumed: ${done.content}`);
  await new Promise((resolve) => remote.server.close(resolve));

  heading("The SDK's client calls a lagent-ts agent", 'served by HTTPAgentServer, with a token');
  const assistant = new AsyncStreamingFunctionCallingAgent({
    name: 'weather-assistant',
    description: 'Says what the weather is',
    llm: pickAsyncLLM((messages) => {
      const last = messages.at(-1)!;
      if (last.role === 'tool') return `It is ${String(last.content)}.`;
      return {
        toolCalls: [
          { name: 'Weather', arguments: { city: String(last.content).replace(/^weather in /, '') } },
        ],
      };
    }),
    actions: [
      asyncTool({
        name: 'Weather',
        description: 'The weather in a city',
        parameters: z.object({ city: z.string() }),
        run: async ({ city }) => `sunny in ${city}`,
      }),
    ],
  });
  const token = randomUUID();
  const server = new HTTPAgentServer({ agent: assistant, port: 0, token });
  const url = await server.listen();
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
  const client = await new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  ).createFromUrl(url);
  const served = await client.getAgentCard();
  console.log(`served card: ${served.name} (skills: ${served.skills.map((skill) => skill.id).join(', ')})`);
  const message = (words: string) => ({
    tenant: '',
    configuration: undefined,
    metadata: undefined,
    message: {
      messageId: randomUUID(),
      contextId: 'sdk-session',
      taskId: '',
      role: Role.ROLE_USER,
      parts: [text(words)],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
  });
  const task = (await client.sendMessage(message('weather in Lisbon') as never)) as Task;
  const answer = task.artifacts
    .flatMap((artifact) => artifact.parts)
    .map((part) => (part.content?.$case === 'text' ? part.content.value : ''))
    .join('');
  console.log(`task ${task.status?.state === 3 ? 'completed' : task.status?.state}: ${answer}`);
  let updates = 0;
  let streamed = '';
  for await (const event of client.sendMessageStream(message('weather in Porto') as never)) {
    if (event.payload?.$case !== 'artifactUpdate') continue;
    updates++;
    for (const part of event.payload.value.artifact?.parts ?? [])
      if (part.content?.$case === 'text') streamed += part.content.value;
  }
  console.log(`streamed: ${streamed} (${updates} artifact update${updates === 1 ? '' : 's'})`);
  await server.close();
}

if (isMain(import.meta.url)) await main();
