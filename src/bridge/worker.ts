/**
 * The worker side of the sync bridge: hosts async objects and answers the blocked thread's requests.
 * This file is a separate build entry (`dist/sync-bridge-worker.{js,cjs}`) and runs only inside the
 * bridge's worker thread; it starts serving when loaded there and does nothing elsewhere.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { isMainThread, type MessagePort, workerData } from 'node:worker_threads';
import { type BridgeReply, type BridgeRequest, REPLY_COUNTER, serializeError } from './protocol';

interface WorkerInit {
  port: MessagePort;
  state: Int32Array;
}

type Hosted = Record<string, unknown>;

function loadModule(path: string): Promise<Record<string, unknown>> {
  if (path.endsWith('.cjs') || path.endsWith('.cts')) {
    return Promise.resolve(createRequire(path)(path) as Record<string, unknown>);
  }
  const specifier = path.startsWith('file:') ? path : pathToFileURL(path).href;
  return import(specifier) as Promise<Record<string, unknown>>;
}

function serve({ port, state }: WorkerInit): void {
  const objects = new Map<number, Hosted>();
  const iterators = new Map<number, AsyncIterator<unknown>>();
  const modules = new Map<string, Promise<Record<string, unknown>>>();
  let nextObjectId = 1;
  let nextIteratorId = 1;

  /** Posts a reply and wakes the blocked thread. Never throws: a reply that cannot be sent becomes an error reply. */
  function send(reply: BridgeReply): void {
    try {
      port.postMessage(reply);
    } catch (error) {
      // The value could not be cloned (a function, a class instance with private state, ...).
      try {
        port.postMessage({ id: reply.id, ok: false, error: serializeError(error) } satisfies BridgeReply);
      } catch {
        const message = 'sync bridge: the reply could not be sent to the calling thread';
        port.postMessage({ id: reply.id, ok: false, error: { name: 'Error', message, fields: {} } });
      }
    }
    Atomics.add(state, REPLY_COUNTER, 1);
    Atomics.notify(state, REPLY_COUNTER);
  }

  function hosted(objectId: number): Hosted {
    const object = objects.get(objectId);
    if (object === undefined) throw new Error(`sync bridge: object #${objectId} was released`);
    return object;
  }

  function method(object: Hosted, name: string): (...args: unknown[]) => unknown {
    const value = object[name];
    if (typeof value !== 'function') throw new TypeError(`sync bridge: ${name} is not a method`);
    return (value as (...args: unknown[]) => unknown).bind(object);
  }

  async function handle(request: BridgeRequest): Promise<BridgeReply | undefined> {
    switch (request.op) {
      case 'create': {
        let loading = modules.get(request.module);
        if (loading === undefined) {
          loading = loadModule(request.module);
          modules.set(request.module, loading);
        }
        const exported = (await loading)[request.exportName];
        if (typeof exported !== 'function') {
          throw new TypeError(`sync bridge: ${request.module} does not export a class ${request.exportName}`);
        }
        const object = Reflect.construct(exported, request.args) as Hosted;
        const objectId = nextObjectId++;
        objects.set(objectId, object);
        return { id: request.id, ok: true, value: objectId };
      }
      case 'call': {
        const value = await method(hosted(request.objectId), request.method)(...request.args);
        return { id: request.id, ok: true, value };
      }
      case 'iterate': {
        const iterable = method(hosted(request.objectId), request.method)(...request.args) as
          | AsyncIterable<unknown>
          | Iterable<unknown>;
        const iterator =
          Symbol.asyncIterator in iterable
            ? iterable[Symbol.asyncIterator]()
            : (iterable[Symbol.iterator]() as unknown as AsyncIterator<unknown>);
        const iteratorId = nextIteratorId++;
        iterators.set(iteratorId, iterator);
        return { id: request.id, ok: true, value: iteratorId };
      }
      case 'next': {
        const iterator = iterators.get(request.iteratorId);
        if (iterator === undefined) return { id: request.id, ok: true, value: undefined, done: true };
        try {
          const result = await iterator.next();
          if (result.done) iterators.delete(request.iteratorId);
          return { id: request.id, ok: true, value: result.value, done: result.done === true };
        } catch (error) {
          iterators.delete(request.iteratorId);
          throw error;
        }
      }
      case 'return': {
        const iterator = iterators.get(request.iteratorId);
        iterators.delete(request.iteratorId);
        await iterator?.return?.();
        return undefined;
      }
      case 'release':
        objects.delete(request.objectId);
        return undefined;
      case 'ping':
        return { id: request.id, ok: true, value: 'pong' };
    }
  }

  port.on('message', (request: BridgeRequest) => {
    handle(request).then(
      (reply) => {
        if (reply) send(reply);
      },
      (error: unknown) => {
        if ('id' in request) send({ id: request.id, ok: false, error: serializeError(error) });
      },
    );
  });
}

const init = (workerData as { lagentSyncBridge?: WorkerInit } | null)?.lagentSyncBridge;
if (!isMainThread && init !== undefined) serve(init);
