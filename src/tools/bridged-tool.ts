import { BaseAction } from '../actions/base-action';
import type { ActionApi, ToolApiSpec, ToolContext } from '../actions/types';
import { locateBridge } from '../bridge/location';
import { SyncBridge } from '../bridge/sync-bridge';
import { ActionReturn, type ActionReturnInit } from '../schema/action-return';

/** What a sync tool twin is built from. */
export interface BridgedToolTarget {
  /** The async class it runs, exported by `lagent-ts/tools`, e.g. `'AsyncIPythonInteractive'`. */
  exportName: string;
  /** The APIs, declared exactly as the async class declares them (`static toolApis`). */
  apis: Readonly<Record<string, ToolApiSpec>>;
  /** The async class's constructor options; structured-cloned into the bridge's worker. */
  options: Record<string, unknown>;
  /** Milliseconds one call may block this thread (the tool's own timeout plus a margin). */
  callTimeout: number;
  /** The tool's name. */
  name: string;
  /** The tool's description. @default '' */
  description?: string | undefined;
}

/**
 * The sync twin of an async tool: the async class runs in the sync bridge's worker thread (the one every
 * bridged object of this thread shares) and each API call blocks until it answers. The twin declares the
 * same APIs, so arguments are checked on this side before anything crosses; its calls answer with the async
 * tool's `ActionReturn`. `close()` closes the hosted tool (ending what it started) and releases it.
 *
 * Use the async class inside servers: a sync call blocks its thread for the whole call.
 */
export class BridgedTool extends BaseAction {
  readonly #bridge: SyncBridge;
  #closed = false;

  constructor(target: BridgedToolTarget) {
    const bridge = new SyncBridge(
      { exportName: target.exportName, args: [target.options], module: locateBridge().tools },
      { timeout: target.callTimeout },
    );
    const apis: Record<string, ActionApi> = {};
    for (const [api, spec] of Object.entries(target.apis)) {
      apis[api] = {
        ...spec,
        run: (args: unknown, context: ToolContext) =>
          new ActionReturn(
            bridge.call<ActionReturnInit>('call', [args, api, { sessionId: context.sessionId }]),
          ),
      };
    }
    super({ name: target.name, description: target.description, apis });
    this.#bridge = bridge;
  }

  /** Closes the hosted async tool (every process or connection it holds) and releases it; idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#bridge.call('close');
    } finally {
      this.#bridge.close();
    }
  }
}
