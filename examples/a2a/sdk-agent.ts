/**
 * An A2A agent built with `@a2a-js/sdk` alone, after the SDK's sample agent: every turn is a task that goes
 * submitted → working → an artifact → completed. It converts amounts of euros to dollars; asked without an
 * amount, it leaves its task `input-required` with a question, and the next message on the task answers it.
 * Served with the SDK's request handler and JSON-RPC transport on `node:http`. Run alone, it prints its URL:
 * `node --import tsx examples/a2a/sdk-agent.ts`.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type AgentCard,
  AgentCard as AgentCardJSON,
  type Message,
  type Part,
  Role,
  TaskState,
} from '@a2a-js/sdk';
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  defaultServerCallContextBuilder,
  type ExecutionEventBus,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  type RequestContext,
  UnauthenticatedUser,
} from '@a2a-js/sdk/server';

const RATE = 1.08;

function text(value: string): Part {
  return { content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

function agentMessage(taskId: string, contextId: string, value: string): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [text(value)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** The executor: what the agent does with each message. */
class CurrencyExecutor implements AgentExecutor {
  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: '',
        status: {
          state: TaskState.TASK_STATE_CANCELED,
          message: undefined,
          timestamp: new Date().toISOString(),
        },
        metadata: undefined,
      }),
    );
  };

  execute = async (context: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const { taskId, contextId, userMessage } = context;
    const said = userMessage.parts
      .map((part) => (part.content?.$case === 'text' ? part.content.value : ''))
      .join(' ');
    const status = (state: TaskState, message?: Message) =>
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: { state, message, timestamp: new Date().toISOString() },
          metadata: undefined,
        }),
      );
    bus.publish(
      AgentEvent.task(
        context.task ?? {
          id: taskId,
          contextId,
          status: {
            state: TaskState.TASK_STATE_SUBMITTED,
            message: undefined,
            timestamp: new Date().toISOString(),
          },
          artifacts: [],
          history: [userMessage],
          metadata: undefined,
        },
      ),
    );
    status(TaskState.TASK_STATE_WORKING, agentMessage(taskId, contextId, 'Converting'));
    const amount = /(\d+(?:\.\d+)?)/.exec(said)?.[1];
    if (amount === undefined) {
      status(TaskState.TASK_STATE_INPUT_REQUIRED, agentMessage(taskId, contextId, 'How many euros?'));
      return;
    }
    const dollars = (Number(amount) * RATE).toFixed(2);
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: {
          artifactId: randomUUID(),
          name: 'conversion',
          description: '',
          parts: [text(`${amount} EUR is ${dollars} USD`)],
          metadata: undefined,
          extensions: [],
        },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
    status(TaskState.TASK_STATE_COMPLETED);
  };
}

/** Starts the agent on 127.0.0.1 (port 0: a free one); resolves to its URL and its server. */
export async function startCurrencyAgent(port = 0): Promise<{ url: string; server: Server }> {
  const card: AgentCard = {
    name: 'Currency Agent',
    description: 'Converts euros to dollars',
    supportedInterfaces: [{ url: '', protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'convert',
        name: 'Convert currency',
        description: 'Converts an amount of euros to dollars',
        tags: ['currency'],
        examples: ['100 euros in dollars'],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new CurrencyExecutor());
  const rpc = new JsonRpcTransportHandler(handler);
  const server = createServer(async (request, response) => {
    if (request.method === 'GET' && request.url === '/.well-known/agent-card.json') {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify(AgentCardJSON.toJSON(card)));
      return;
    }
    let body = '';
    for await (const chunk of request) body += chunk;
    const version = request.headers['a2a-version'];
    const context = defaultServerCallContextBuilder({
      extensions: undefined,
      user: new UnauthenticatedUser(),
      headers: request.headers,
      requestedVersion: typeof version === 'string' ? version : undefined,
    } as never);
    const result = await rpc.handle(body, context);
    if (result !== null && typeof result === 'object' && Symbol.asyncIterator in result) {
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      for await (const event of result as AsyncGenerator<unknown>)
        response.write(`data: ${JSON.stringify(event)}\n\n`);
      response.end();
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify(result));
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  card.supportedInterfaces[0]!.url = url;
  return { url, server };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { url } = await startCurrencyAgent(Number(process.env.PORT ?? 0));
  console.log(`currency agent at ${url}`);
}
