import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { AsyncBaseAction, BaseAction } from '../../../actions/base-action';
import type { ToolContext } from '../../../actions/types';
import { type CallFrame, currentFrame, journal } from '../../../core/call-context';
import { MemoryManager, SESSION_IN_USE } from '../../../memory/memory-manager';
import { ActionReturn } from '../../../schema/action-return';
import { AgentMessage, type LagentMessageJSON } from '../../../schema/agent-message';
import { ConfigurationError, StoreError, ValidationError } from '../../../schema/errors';
import { type SessionId, sessionKey } from '../../../schema/session';
import { ActionStatusCode } from '../../../schema/status';
import type { AcquiredSession, MaybePromise, SessionStore } from '../../../stores/types';
import { isThenable } from '../../../utils/is';
import type { AgentBase } from '../../agent-base';
import { LANES } from '../../agent-symbols';
import { emitEvent } from '../../lifecycle/events';
import { enclosingResourceId } from '../resource-id';
import { sessionBindingOf } from '../session-store/persist';
import { WORKING_MEMORY } from './symbol';

/*
 * Working memory: one record per session (`scope: 'session'`) or per resource (`scope: 'resource'`, the
 * `resourceId` call option: a user, a tenant), free text or a value of a zod schema. The model sees it in its
 * system prompt (index.ts) and changes it with the `updateWorkingMemory` tool, a tool like any other (journaled,
 * metered, traced). An update made inside a call is taken back when that call fails.
 *
 * - A session's record is one message in a memory of its own, kept beside the agent's (`workingMemory` in the
 *   state dict): session stores persist it with the session's turn, `stateDict()` carries it.
 * - A resource's record is held in the process, and in the agent's session store when it has one, as a
 *   "session" of the namespace `<namespace>/working-memory` named by the resource id (so no session id can name
 *   it). Each update is written at once, under the record's lease and only onto the version the model was
 *   shown: an update made from an older version (another session of the resource changed it meanwhile) is
 *   refused with the record as it is now, so the model makes it again and no update is lost unseen.
 */

/** The name of the update tool the model calls. */
export const UPDATE_TOOL = 'updateWorkingMemory';

/** The `workingMemory` agent option. */
export interface WorkingMemoryOptions {
  /**
   * The record's shape: without it the record is free text, which each update replaces. With a `z.object`
   * schema an update gives the fields that change and is merged into the record (a shallow merge; `null`
   * clears an optional field); with any other schema it replaces the record. The result must satisfy the
   * schema, else the model is told why and the record stays as it was.
   */
  schema?: z.ZodType | undefined;
  /**
   * `'session'`: one record per session. `'resource'`: one record shared by every session called with the same
   * `resourceId` call option (a call without one is refused).
   */
  scope: 'session' | 'resource';
}

/** A resource's record as this process last saw it. */
interface ResourceRecord {
  value: unknown;
  /** The store's version of it (in-process records count their own). */
  version: number;
}

/** The largest record, as text: what goes into every system prompt. */
const MAX_RECORD_CHARS = 16_000;

/** Resources (and sessions per resource) whose records and shown versions are held, at most (oldest dropped first). */
const MAX_SEEN = 10_000;

/** The working memory of one agent (see the module comment). */
export class WorkingMemory {
  readonly scope: 'session' | 'resource';
  readonly schema: z.ZodType | undefined;
  /** The agent the option was given to: it emits the `workingMemory` events and keeps session records. */
  readonly owner: AgentBase;
  readonly tool: BaseAction | AsyncBaseAction;
  /** Session records: one message each, its content the record's text (JSON with a schema). */
  readonly sessions: MemoryManager;
  /** The schema as the system prompt gives it (JSON schema), made once. */
  readonly #schemaText: string | undefined;
  readonly #resources = new Map<string, ResourceRecord>();
  /** Per resource, the version each session's model was last shown (`resourceId`, then the session key). */
  readonly #seen = new Map<string, Map<string | number, number>>();
  /** Per resource, a write taking back a failed call's update, which later reads and writes wait for. */
  readonly #undoing = new Map<string, Promise<unknown>>();
  /** Per call, the resource updates made in it, which its failure takes back. */
  readonly #undos = new WeakMap<CallFrame, Undo[]>();
  readonly #merges: boolean;

  constructor(owner: AgentBase, options: WorkingMemoryOptions, sync: boolean) {
    if (options === null || typeof options !== 'object') {
      throw new ConfigurationError({
        message: `${owner.name}: workingMemory must be { scope: 'session' | 'resource', schema? }`,
      });
    }
    if (options.scope !== 'session' && options.scope !== 'resource') {
      throw new ConfigurationError({
        message: `${owner.name}: workingMemory.scope must be 'session' or 'resource', got ${JSON.stringify(options.scope)}`,
      });
    }
    if (options.schema !== undefined && !(options.schema instanceof z.ZodType)) {
      throw new ConfigurationError({ message: `${owner.name}: workingMemory.schema must be a zod schema` });
    }
    this.owner = owner;
    this.scope = options.scope;
    this.schema = options.schema;
    this.#merges = options.schema instanceof z.ZodObject;
    this.#schemaText =
      options.schema === undefined
        ? undefined
        : JSON.stringify(z.toJSONSchema(options.schema, { io: 'input', unrepresentable: 'any' }));
    // As many sessions as the agent's memory keeps (a bounded one drops idle sessions, never one in a call).
    const maxSessions = owner.memory?.maxSessions;
    this.sessions =
      maxSessions === undefined ? new MemoryManager() : new MemoryManager(undefined, { maxSessions });
    if (maxSessions !== undefined) this.sessions[SESSION_IN_USE] = (key) => owner[LANES].isBusy(key);
    const update = updateSchema(options.schema);
    const api = {
      description: this.#merges
        ? 'Updates your working memory: give the fields that change; they are merged into the record.'
        : 'Replaces your working memory with the complete new record.',
      parameters: z.object({ memory: update }),
      run: (args: { memory: unknown }, context: ToolContext) => this.update(args.memory, context.sessionId),
    };
    const init = {
      name: UPDATE_TOOL,
      description: 'Keeps what you should remember (facts, preferences, goals) in your working memory.',
      apis: { run: api },
    };
    this.tool = sync ? new BaseAction(init) : new AsyncBaseAction(init);
    (this.tool as { [WORKING_MEMORY]?: WorkingMemory })[WORKING_MEMORY] = this;
  }

  /** The session's record, or the resource's as last read (undefined when there is none). */
  current(sessionId: SessionId, resourceId: string | undefined): unknown {
    if (this.scope === 'resource') return this.#resources.get(resourceId!)?.value;
    const message = this.sessions.get(sessionId)?.getMemory({ recentN: 1 })[0];
    return message === undefined ? undefined : this.#parse(message.content);
  }

  /**
   * The record the model is to see now: a session's at hand; a resource's read from the store (a promise with
   * an async store), remembered as what `sessionId`'s model was shown.
   */
  read(sessionId: SessionId, resourceId: string | undefined): MaybePromise<unknown> {
    if (this.scope === 'session') return this.current(sessionId, undefined);
    const id = resourceId!;
    const shown = (record: ResourceRecord | undefined) => {
      this.#see(id, sessionId, record?.version ?? 0);
      return record?.value;
    };
    const record = this.#load(id);
    return isThenable(record) ? (record as Promise<ResourceRecord | undefined>).then(shown) : shown(record);
  }

  /**
   * The update tool's work: the record with `patch` applied, checked, kept and reported (the `workingMemory`
   * event), and a way to take it back journaled in the call it is made in.
   */
  update(patch: unknown, sessionId: SessionId): MaybePromise<ActionReturn> {
    const frame = currentFrame();
    if (this.scope === 'session') {
      const value = this.#checked(this.#merged(this.current(sessionId, undefined), patch));
      this.#keepSession(sessionId, value, frame);
      return updated(value);
    }
    const resourceId = resourceIdOf(frame, this.owner);
    const store = this.#store();
    if (store === undefined) return this.#updateInProcess(resourceId, sessionId, patch, frame);
    return after(this.#undoing.get(resourceId), () =>
      this.#updateStored(store, resourceId, sessionId, patch, frame),
    );
  }

  /**
   * A successful update's result as a call answered from its journal (a durable replay) gives it: the value
   * is kept unless the record already is that value, so a replay never applies an update twice.
   */
  replayed(result: ActionReturn, sessionId: SessionId, frame: CallFrame): MaybePromise<void> {
    const item = result.result?.find((entry) => entry.type === RECORD_ITEM);
    if (item === undefined || typeof item.content !== 'string') return;
    let value: unknown;
    try {
      value = JSON.parse(item.content);
    } catch {
      return;
    }
    if (this.scope === 'session') {
      if (!sameValue(this.current(sessionId, undefined), value)) this.#keepSession(sessionId, value, frame);
      return;
    }
    const resourceId = resourceIdOf(frame, this.owner);
    // The tool ran in this process (the common case): the record holds its value already.
    if (sameValue(this.#resources.get(resourceId)?.value, value)) return;
    const store = this.#store();
    const apply = (record: ResourceRecord | undefined): MaybePromise<void> => {
      if (sameValue(record?.value, value)) return;
      if (store === undefined) {
        this.#keepInProcess(resourceId, sessionId, value, record, frame);
        return;
      }
      const written = this.#write(store, resourceId, value, undefined);
      const kept = (version: number) => {
        this.#kept(resourceId, sessionId, value, version, record, frame);
      };
      return isThenable(written) ? (written as Promise<number>).then(kept) : kept(written as number);
    };
    const record = this.#load(resourceId);
    return isThenable(record) ? (record as Promise<ResourceRecord | undefined>).then(apply) : apply(record);
  }

  /** What the system prompt says about the record (index.ts puts it there). */
  instruction(value: unknown): string {
    const whose =
      this.scope === 'resource'
        ? 'about the person you talk with, kept across all of your conversations with them'
        : 'about this conversation';
    const how = this.#merges
      ? `call ${UPDATE_TOOL} with just the fields that change (they are merged into it; null clears one)`
      : `call ${UPDATE_TOOL} with the complete new record (it replaces the old one)`;
    const lines = [
      '## Working memory',
      `Your working memory is a short record ${whose}: facts, preferences, goals, what is still open. When you learn something worth keeping there, or something in it stops being true, ${how}, then go on with your answer. Keep it brief and do not tell the user about it unless asked.`,
    ];
    if (this.#schemaText !== undefined) lines.push(`Its JSON schema: ${this.#schemaText}`);
    lines.push(
      value === undefined
        ? 'It is empty.'
        : `It reads:\n<working_memory>\n${this.#text(value)}\n</working_memory>`,
    );
    return lines.join('\n');
  }

  // --- session records -------------------------------------------------------------------------------------

  #keepSession(sessionId: SessionId, value: unknown, frame: CallFrame | undefined): void {
    const memory = this.sessions.getOrCreate(sessionId);
    const before = memory.getMemory({ recentN: Number.MAX_SAFE_INTEGER });
    const message = new AgentMessage({ sender: 'workingMemory', content: this.#text(value) });
    memory.clear();
    memory.add(message);
    if (frame !== undefined) {
      // Taken back with the call: the record as it was (the same message objects, so a session store sees no change).
      journal(frame, {
        memory: {
          remove: () => {
            if (memory.getMemory({ recentN: 1 })[0] !== message) return;
            memory.clear();
            memory.add(before);
          },
        },
        messages: [],
      });
    }
    this.#emit(sessionId, undefined, value);
  }

  // --- resource records --------------------------------------------------------------------------------------

  #store(): { store: SessionStore; namespace: string } | undefined {
    const binding = sessionBindingOf(this.owner);
    return binding === undefined
      ? undefined
      : { store: binding.store, namespace: `${binding.namespace}/working-memory` };
  }

  /** The resource's record: held in the process, or read from the store (a promise with an async one). */
  #load(resourceId: string): MaybePromise<ResourceRecord | undefined> {
    const target = this.#store();
    if (target === undefined) return this.#resources.get(resourceId);
    return after(this.#undoing.get(resourceId), () => {
      let read: MaybePromise<{ version: number; state: Record<string, LagentMessageJSON[]> } | undefined>;
      try {
        read = target.store.readSession(target.namespace, resourceId);
      } catch (error) {
        throw storeError(target.store, 'readSession', resourceId, error);
      }
      const kept = (session: { version: number; state: Record<string, LagentMessageJSON[]> } | undefined) => {
        if (session === undefined) {
          this.#resources.delete(resourceId);
          return undefined;
        }
        const content = session.state[RECORD_KEY]?.[0]?.content;
        const record = {
          value: content === undefined ? undefined : this.#parse(content),
          version: session.version,
        };
        this.#cache(resourceId, record);
        return record;
      };
      if (!isThenable(read)) return kept(read);
      return (read as Promise<Parameters<typeof kept>[0]>).then(kept, (error: unknown) => {
        throw storeError(target.store, 'readSession', resourceId, error);
      });
    });
  }

  #updateInProcess(
    resourceId: string,
    sessionId: SessionId,
    patch: unknown,
    frame: CallFrame | undefined,
  ): ActionReturn {
    const record = this.#resources.get(resourceId);
    const stale = this.#stale(resourceId, sessionId, record?.version ?? 0);
    if (stale !== undefined) return stale;
    const value = this.#checked(this.#merged(record?.value, patch));
    this.#keepInProcess(resourceId, sessionId, value, record, frame);
    return updated(value);
  }

  #keepInProcess(
    resourceId: string,
    sessionId: SessionId,
    value: unknown,
    before: ResourceRecord | undefined,
    frame: CallFrame | undefined,
  ): void {
    this.#kept(resourceId, sessionId, value, (before?.version ?? 0) + 1, before, frame);
  }

  #updateStored(
    target: { store: SessionStore; namespace: string },
    resourceId: string,
    sessionId: SessionId,
    patch: unknown,
    frame: CallFrame | undefined,
  ): MaybePromise<ActionReturn> {
    return this.#leased(target, resourceId, (session, owner, release) => {
      const content = session.state?.[RECORD_KEY]?.[0]?.content;
      const before = {
        value: content === undefined ? undefined : this.#parse(content),
        version: session.version,
      };
      this.#cache(resourceId, before);
      const stale = this.#stale(resourceId, sessionId, session.version);
      if (stale !== undefined) {
        release();
        return stale;
      }
      const value = this.#checked(this.#merged(before.value, patch));
      const committed = this.#commit(target, resourceId, owner, session.version, value);
      return then(committed, (version) => {
        this.#kept(resourceId, sessionId, value, version, before, frame);
        return updated(value);
      });
    });
  }

  /** Writes a resource's record under its lease, at `version` when given (else onto whatever is there); -1 when it moved. */
  #write(
    target: { store: SessionStore; namespace: string },
    resourceId: string,
    value: unknown,
    version: number | undefined,
  ): MaybePromise<number> {
    return this.#leased(target, resourceId, (session, owner, release) => {
      if (version !== undefined && session.version !== version) {
        release();
        return -1;
      }
      return this.#commit(target, resourceId, owner, session.version, value);
    });
  }

  /** Commits a resource's record (none for `undefined`) at `version`, releasing its lease. */
  #commit(
    target: { store: SessionStore; namespace: string },
    resourceId: string,
    owner: string,
    version: number,
    value: unknown,
  ): MaybePromise<number> {
    const { store, namespace } = target;
    return storeCall(store, 'commitTurn', resourceId, () =>
      store.commitTurn(namespace, resourceId, {
        owner,
        version,
        turn: { replace: { [RECORD_KEY]: value === undefined ? [] : [this.#stored(value)] } },
        release: true,
      }),
    );
  }

  /**
   * Runs `work` holding the lease of a resource's record (one read and one write: another writer waits a
   * moment, an async store's callers by pausing; a sync store's is refused at once), releasing it when `work`
   * fails.
   */
  #leased<T>(
    target: { store: SessionStore; namespace: string },
    resourceId: string,
    work: (session: AcquiredSession, owner: string, release: () => void) => MaybePromise<T>,
  ): MaybePromise<T> {
    const { store, namespace } = target;
    const owner = `working-memory-${randomUUID()}`;
    const release = () => {
      try {
        const released = store.releaseSession(namespace, resourceId, owner);
        if (isThenable(released)) (released as Promise<void>).catch(() => {});
      } catch {
        // The lease runs out by itself.
      }
    };
    const attempt = (tries: number): MaybePromise<T> => {
      const acquired = storeCall(store, 'acquireSession', resourceId, () =>
        store.acquireSession(namespace, resourceId, { owner, leaseMs: LEASE_MS }),
      );
      return then(acquired, (session) => {
        if (!session.acquired) {
          if (store.synchronous || tries >= BUSY_TRIES) {
            throw new StoreError({
              message: `${store.description}: the working memory of resource ${JSON.stringify(resourceId)} is being written by another call; try the update again`,
              store: store.description,
              operation: 'acquireSession',
              sessionId: resourceId,
            });
          }
          const wait = Math.min(BUSY_PAUSE_MS, Math.max(1, session.until - Date.now()));
          return new Promise<void>((resolve) => setTimeout(resolve, wait)).then(() => attempt(tries + 1));
        }
        let result: MaybePromise<T>;
        try {
          result = work(session, owner, release);
        } catch (error) {
          release();
          throw error;
        }
        if (!isThenable(result)) return result;
        return (result as Promise<T>).then(undefined, (error: unknown) => {
          release();
          throw error;
        });
      });
    };
    return attempt(0);
  }

  /**
   * A resource's record is now `value` at `version`: cached, shown to `sessionId` (its model made the update),
   * reported, and taken back with the call when it fails (unless the record changed again meanwhile).
   */
  #kept(
    resourceId: string,
    sessionId: SessionId,
    value: unknown,
    version: number,
    before: ResourceRecord | undefined,
    frame: CallFrame | undefined,
  ): void {
    this.#cache(resourceId, { value, version });
    this.#see(resourceId, sessionId, version);
    if (frame !== undefined) {
      const undo: Undo = { done: false, run: () => this.#undo(resourceId, version, before) };
      journal(frame, { memory: { remove: () => void runUndo(undo) }, messages: [] });
      const undos = this.#undos.get(frame);
      if (undos === undefined) this.#undos.set(frame, [undo]);
      else undos.push(undo);
    }
    this.#emit(sessionId, resourceId, value);
  }

  /**
   * Takes back the resource updates made in `frame`'s call, which failed, and gives a promise of the writes
   * that does (the call waits for it before it fails: another process reading the record afterwards does not
   * see them). What is left (updates of calls made in it that were handed to it) its journal takes back.
   */
  undoFailed(frame: CallFrame): Promise<void> | undefined {
    const undos = this.#undos.get(frame);
    if (undos === undefined) return undefined;
    this.#undos.delete(frame);
    const writes: Promise<unknown>[] = [];
    for (let i = undos.length - 1; i >= 0; i--) {
      const written = runUndo(undos[i]!);
      if (written !== undefined) writes.push(written);
    }
    return writes.length === 0 ? undefined : Promise.all(writes).then(() => {});
  }

  /** Forgets the undo entries of a call that succeeded (its journal hands them to its caller). */
  succeeded(frame: CallFrame): void {
    this.#undos.delete(frame);
  }

  /**
   * Takes a failed call's update of a resource back, when the record is still what it wrote: at once in the
   * process, a write (a promise of it with an async store, which later reads and writes wait for) with a store.
   */
  #undo(resourceId: string, version: number, before: ResourceRecord | undefined): Promise<void> | undefined {
    const target = this.#store();
    if (target === undefined) {
      if (this.#resources.get(resourceId)?.version !== version) return undefined;
      // A new version (not the old one's number): a session shown the update must read the record again.
      this.#resources.set(resourceId, { value: before?.value, version: version + 1 });
      return undefined;
    }
    this.#resources.delete(resourceId);
    let written: MaybePromise<number>;
    try {
      written = this.#write(target, resourceId, before?.value, version);
    } catch (error) {
      warnUndo(resourceId, error);
      return undefined;
    }
    if (!isThenable(written)) return undefined;
    const settled = (written as Promise<number>).then(
      () => {},
      (error: unknown) => warnUndo(resourceId, error),
    );
    const chained = after(this.#undoing.get(resourceId), () => settled) as Promise<void>;
    this.#undoing.set(resourceId, chained);
    chained.then(() => {
      if (this.#undoing.get(resourceId) === chained) this.#undoing.delete(resourceId);
    });
    return chained;
  }

  /**
   * Refuses an update made from an older version of a resource's record than `version` (another session
   * changed it after this session's model was shown it), with the record as it is now.
   */
  #stale(resourceId: string, sessionId: SessionId, version: number): ActionReturn | undefined {
    const shown = this.#seen.get(resourceId)?.get(sessionKey(sessionId));
    if (shown === undefined || shown === version) return undefined;
    this.#see(resourceId, sessionId, version);
    const value = this.#resources.get(resourceId)?.value;
    return new ActionReturn({
      errmsg: `The working memory was changed in another conversation since you read it; nothing was updated. It now reads:\n${value === undefined ? '(empty)' : this.#text(value)}\nMake your update again against it if it is still needed.`,
      state: ActionStatusCode.API_ERROR,
    });
  }

  /**
   * Keeps a resource's record as last read or written. With a store it is a cache of the store's, bounded
   * (most recently used kept); in the process alone it is the record itself.
   */
  #cache(resourceId: string, record: ResourceRecord): void {
    const resources = this.#resources;
    resources.delete(resourceId);
    resources.set(resourceId, record);
    if (resources.size > MAX_SEEN && sessionBindingOf(this.owner) !== undefined)
      resources.delete(resources.keys().next().value!);
  }

  #see(resourceId: string, sessionId: SessionId, version: number): void {
    let sessions = this.#seen.get(resourceId);
    if (sessions === undefined) {
      if (this.#seen.size >= MAX_SEEN) this.#seen.delete(this.#seen.keys().next().value!);
      sessions = new Map();
      this.#seen.set(resourceId, sessions);
    }
    const key = sessionKey(sessionId);
    sessions.delete(key);
    if (sessions.size >= MAX_SEEN) sessions.delete(sessions.keys().next().value!);
    sessions.set(key, version);
  }

  // --- values ----------------------------------------------------------------------------------------------

  #merged(current: unknown, patch: unknown): unknown {
    if (!this.#merges || patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
    const merged: Record<string, unknown> = {
      ...(current !== null && typeof current === 'object' ? (current as Record<string, unknown>) : {}),
    };
    for (const [key, field] of Object.entries(patch as Record<string, unknown>)) {
      if (field === null) delete merged[key];
      else merged[key] = field;
    }
    return merged;
  }

  /** The value checked against the schema (its parsed output), or a clear error for the model. */
  #checked(value: unknown): unknown {
    let checked = value;
    if (this.schema !== undefined) {
      const parsed = this.schema.safeParse(value);
      if (!parsed.success) {
        throw new ValidationError({
          message: `the working memory was not updated: the result would not match its schema (${z.prettifyError(parsed.error).replace(/\n/g, '; ')})`,
          field: 'memory',
        });
      }
      checked = parsed.data;
    }
    const text = this.#text(checked);
    if (text.length > MAX_RECORD_CHARS) {
      throw new ValidationError({
        message: `the working memory was not updated: the record would be ${text.length} characters, more than ${MAX_RECORD_CHARS}; keep it brief`,
        field: 'memory',
      });
    }
    return checked;
  }

  #text(value: unknown): string {
    return this.schema === undefined && typeof value === 'string' ? value : JSON.stringify(value);
  }

  #parse(content: unknown): unknown {
    if (typeof content !== 'string') return content;
    if (this.schema === undefined) return content;
    try {
      return JSON.parse(content);
    } catch {
      return content;
    }
  }

  #stored(value: unknown): LagentMessageJSON {
    return new AgentMessage({ sender: 'workingMemory', content: this.#text(value) }).toJSON({
      format: 'lagent',
    });
  }

  #emit(sessionId: SessionId, resourceId: string | undefined, value: unknown): void {
    const agent = this.owner;
    emitEvent(agent, 'workingMemory', { agent, sessionId, scope: this.scope, resourceId, value, path: '' });
  }
}

/** The key of a resource's record in its stored state. */
const RECORD_KEY = 'working_memory';
/** The result item of an update that carries the record (what a durable replay keeps). */
const RECORD_ITEM = 'working_memory';
/** A resource record's lease while it is written (a write holds it for one read and one commit). */
const LEASE_MS = 10_000;
/** How often, and how long at most between tries, an async store's writer asks again for a lease held by another. */
const BUSY_TRIES = 100;
const BUSY_PAUSE_MS = 20;

/** Taking back one resource update, once (by the failed call that made it, or by its journal). */
interface Undo {
  done: boolean;
  run(): Promise<void> | undefined;
}

function runUndo(undo: Undo): Promise<void> | undefined {
  if (undo.done) return undefined;
  undo.done = true;
  return undo.run();
}

/** What the update tool answers: that it worked, and the record now (JSON). */
function updated(value: unknown): ActionReturn {
  return new ActionReturn({
    result: [
      { type: 'text', content: 'Working memory updated.' },
      { type: RECORD_ITEM, content: JSON.stringify(value) },
    ],
  });
}

/** The tool's argument: free text, the fields of an object schema (any of them), or a value of the schema. */
function updateSchema(schema: z.ZodType | undefined): z.ZodType {
  if (schema === undefined) return z.string().describe('The complete new working memory, as text.');
  if (schema instanceof z.ZodObject) {
    const fields: Record<string, z.ZodType> = {};
    for (const [key, field] of Object.entries(schema.shape as Record<string, z.ZodType>))
      fields[key] = field.nullable().optional();
    return z.object(fields).describe('The fields that change.');
  }
  return schema;
}

/** The `resourceId` of the nearest call that was given one, or a clear error. */
export function resourceIdOf(frame: CallFrame | undefined, owner: AgentBase): string {
  const id = enclosingResourceId(frame);
  if (id !== undefined) {
    if (typeof id !== 'string' || id.length === 0 || id.length > 1024) {
      throw new ValidationError({
        message: `${owner.name}: resourceId must be a string of 1 to 1024 characters`,
        field: 'resourceId',
      });
    }
    return id;
  }
  throw new ValidationError({
    message: `${owner.name} keeps its working memory per resource (scope: 'resource'): call it with { resourceId } (whose memory it is)`,
    field: 'resourceId',
  });
}

function sameValue(a: unknown, b: unknown): boolean {
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}

/** `next()` once `pending` settled (at once without it). */
function after<T>(pending: Promise<unknown> | undefined, next: () => MaybePromise<T>): MaybePromise<T> {
  return pending === undefined ? next() : pending.then(next);
}

/** `next(value)` for a value or a promise of one. */
function then<T, R>(value: MaybePromise<T>, next: (value: T) => MaybePromise<R>): MaybePromise<R> {
  return isThenable(value) ? (value as Promise<T>).then(next) : next(value as T);
}

/** A store call whose failures (thrown or rejected) are `StoreError`s naming the resource. */
function storeCall<T>(
  store: SessionStore,
  operation: string,
  resourceId: string,
  call: () => MaybePromise<T>,
): MaybePromise<T> {
  let result: MaybePromise<T>;
  try {
    result = call();
  } catch (error) {
    throw storeError(store, operation, resourceId, error);
  }
  if (!isThenable(result)) return result;
  return (result as Promise<T>).then(undefined, (error: unknown) => {
    throw storeError(store, operation, resourceId, error);
  });
}

function storeError(store: SessionStore, operation: string, resourceId: string, error: unknown): Error {
  if (error instanceof StoreError) return error;
  return new StoreError({
    message: `${store.description}: ${operation} of the working memory of resource ${JSON.stringify(resourceId)} failed: ${(error as Error)?.message ?? String(error)}`,
    store: store.description,
    operation,
    sessionId: resourceId,
    cause: error,
  });
}

function warnUndo(resourceId: string, error: unknown): void {
  process.emitWarning(
    `a failed call's update of the working memory of resource ${JSON.stringify(resourceId)} could not be taken back: ${(error as Error)?.message ?? String(error)}`,
    { code: 'LAGENT_WORKING_MEMORY_UNDO' },
  );
}
