import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

/**
 * An OpenAI-compatible model server for the tests whose text arrives only as the test lets it: each streamed
 * reply sends its first `content` piece, then one more per `release()`, so a test sees a run in the middle of
 * its reply, kills or cancels it there, and goes on, without waiting on a clock. Replies with tool calls are sent
 * whole. The test is told of each request (`request(i)`) and whether its client went away (`aborted`).
 */

export interface GatedReply {
  /** The text, in the pieces it is streamed in. */
  content?: string[];
  toolCalls?: { id: string; name: string; arguments: Record<string, unknown> }[];
}

export interface GatedRequest {
  index: number;
  body: Record<string, unknown>;
  /** How many pieces of text were sent. */
  sent: number;
  /** The client closed the connection before the reply ended. */
  aborted: boolean;
  /** Lets `n` more pieces go. */
  release(n?: number): void;
  /** Resolves once `n` pieces were sent. */
  sentAtLeast(n: number): Promise<void>;
  /** Resolves once the client went away before the end. */
  readonly closed: Promise<void>;
}

export interface GatedModel {
  url: string;
  /** `url + '/v1'`. */
  baseURL: string;
  requests: GatedRequest[];
  /** Resolves to request `index` (0-based) once it arrived. */
  request(index: number): Promise<GatedRequest>;
  close(): Promise<void>;
}

export async function startGatedModel(
  script: (body: Record<string, unknown>, index: number) => GatedReply,
): Promise<GatedModel> {
  const requests: GatedRequest[] = [];
  const waiting = new Map<number, (request: GatedRequest) => void>();
  const sockets = new Set<import('node:net').Socket>();
  const server = createServer((incoming: IncomingMessage, response: ServerResponse) => {
    let text = '';
    incoming.setEncoding('utf8');
    incoming.on('data', (chunk: string) => {
      text += chunk;
    });
    incoming.on('end', () => {
      const body = JSON.parse(text || '{}') as Record<string, unknown>;
      const index = requests.length;
      const reply = script(body, index);
      answer(index, body, reply, response);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  function answer(index: number, body: Record<string, unknown>, reply: GatedReply, response: ServerResponse) {
    const pieces = reply.content ?? [];
    let allowed = 1;
    let wake: (() => void) | undefined;
    let closedResolve!: () => void;
    const closed = new Promise<void>((resolve) => {
      closedResolve = resolve;
    });
    const sentWaiters: { n: number; resolve: () => void }[] = [];
    const request: GatedRequest = {
      index,
      body,
      sent: 0,
      aborted: false,
      release(n = 1) {
        allowed += n;
        wake?.();
      },
      sentAtLeast(n) {
        if (request.sent >= n) return Promise.resolve();
        return new Promise((resolve) => sentWaiters.push({ n, resolve }));
      },
      closed,
    };
    requests.push(request);
    waiting.get(index)?.(request);
    let done = false;
    response.on('close', () => {
      if (!done) {
        request.aborted = true;
        closedResolve();
        wake?.();
      }
    });
    const id = `chatcmpl-${index}`;
    const model = String(body.model ?? 'gated');
    const toolCalls = reply.toolCalls?.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: JSON.stringify(call.arguments) },
    }));
    if (body.stream !== true) {
      done = true;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          id,
          object: 'chat.completion',
          created: 1,
          model,
          choices: [
            {
              index: 0,
              message: toolCalls
                ? { role: 'assistant', content: null, tool_calls: toolCalls }
                : { role: 'assistant', content: pieces.join('') },
              finish_reason: toolCalls ? 'tool_calls' : 'stop',
            },
          ],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const event = (delta: unknown, finish: string | null = null) =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    response.write(event({ role: 'assistant', content: '' }));
    void (async () => {
      for (const piece of pieces) {
        while (request.sent >= allowed && !request.aborted) {
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
        }
        if (request.aborted || response.destroyed) return;
        response.write(event({ content: piece }));
        request.sent++;
        for (const waiter of sentWaiters.filter((w) => w.n <= request.sent)) waiter.resolve();
      }
      if (toolCalls) {
        toolCalls.forEach((call, i) => {
          response.write(event({ tool_calls: [{ index: i, ...call }] }));
        });
      }
      response.write(event({}, toolCalls ? 'tool_calls' : 'stop'));
      response.write('data: [DONE]\n\n');
      done = true;
      response.end();
    })();
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  const url = `http://127.0.0.1:${address.port}`;
  return {
    url,
    baseURL: `${url}/v1`,
    requests,
    request(index) {
      const found = requests[index];
      if (found !== undefined) return Promise.resolve(found);
      return new Promise((resolve) => waiting.set(index, resolve));
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
