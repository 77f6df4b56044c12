import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * The connections of an HTTP server and how many answers each is giving, so that closing the server ends every
 * one of them. Node's `server.close()` (Fastify's too) ends only the keep-alive connections idle at that moment;
 * left open are a connection that has sent no request yet (browsers and client pools open spare ones ahead; Node
 * does not count it idle, and once the server stops listening nothing times it out) and a keep-alive connection
 * whose answer ends after the close (it waits out the keep-alive timeout). Either keeps the server's close, and
 * the process, waiting on the client.
 */
export class OpenConnections {
  /** Each open connection, with the number of answers it is giving. */
  readonly #answering = new Map<Socket, number>();
  #closing = false;

  constructor(server: Server) {
    server.on('connection', (socket: Socket) => {
      this.#answering.set(socket, 0);
      socket.once('close', () => this.#answering.delete(socket));
    });
    server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      const socket = request.socket;
      const answering = this.#answering.get(socket);
      if (answering === undefined) return;
      this.#answering.set(socket, answering + 1);
      // 'close' follows the answer's end, or the connection's loss.
      response.once('close', () => this.#answered(socket));
    });
  }

  /**
   * Ends every connection giving no answer now (idle, or with no request yet), and each other one once its
   * answers are sent. Call it once the server has stopped accepting connections.
   */
  closeAll(): void {
    this.#closing = true;
    for (const [socket, answering] of this.#answering) if (answering === 0) end(socket);
  }

  #answered(socket: Socket): void {
    const answering = this.#answering.get(socket);
    if (answering === undefined) return;
    this.#answering.set(socket, answering - 1);
    if (answering === 1 && this.#closing) end(socket);
  }
}

/** Ends a connection once what was written to it is sent (as Node ends a `Connection: close` answer's). */
function end(socket: Socket): void {
  if (socket.destroyed) return;
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(() => socket.destroy());
}
