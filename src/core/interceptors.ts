import { ConfigurationError } from '../schema/errors';
import { isThenable } from '../utils/is';
import { driveSync, type Steps } from './steps';

/*
 * Interceptors: one seam per concern around the three things a call does — the agent call itself, each model
 * call and each tool call made inside it. An interceptor has up to three hooks (`agentCall`, `modelCall`,
 * `toolCall`); each is given the call's context and `next`, which runs the rest of the chain (the interceptors
 * inside it, then the call itself) and gives its result. A hook may call `next` once, not at all (it answers
 * itself: a cache, a refusal), or with a changed context.
 *
 * A hook is written one of two ways:
 * - as a generator function, in the step protocol of `steps.ts`: `*agentCall(ctx, next) { const reply = yield*
 *   next(); ... }`. Such a hook serves every variant, sync and async, streaming included: a promise or a stream
 *   it meets is yielded to the call's driver like every other step. The built-in concerns are written so.
 * - as a plain function for the agent's kind: for a sync agent `next()` returns the result; for an async agent
 *   it returns a promise of it, and the hook may be an `async` function.
 *
 * Each concern keeps its state in a slot of the call's context (`slot()` makes a key; `get`, `set`, and `find`,
 * which looks in the calls the call is made in too), so adding a concern adds no field to the call's state.
 */

/** A typed key of a call's slots (see {@link slot}). */
export interface Slot<T> {
  readonly name: string;
  /** Never set: carries the slot's type. */
  readonly type?: T;
}

/** A new slot key: `const SEEN = slot<number>('seen')`, then `ctx.set(SEEN, 1)`, `ctx.find(SEEN)`. */
export function slot<T>(name: string): Slot<T> {
  return Object.freeze({ name }) as Slot<T>;
}

/** What holds slots: a call (see `CallFrame`). */
export interface SlotHolder {
  get<T>(key: Slot<T>): T | undefined;
  set<T>(key: Slot<T>, value: T | undefined): void;
  /** This call's value of `key`, else the nearest one of the calls it is made in. */
  find<T>(key: Slot<T>): T | undefined;
}

/** The value of `key` in `entries` (keys and values interleaved; see {@link Slots}). */
export function slotOf<T>(entries: unknown[] | undefined, key: Slot<T>): T | undefined {
  if (entries === undefined) return undefined;
  for (let i = 0; i < entries.length; i += 2) if (entries[i] === key) return entries[i + 1] as T;
  return undefined;
}

/** `entries` with `key` set to `value` (removed when undefined); a new array when there was none. */
export function withSlot<T>(
  entries: unknown[] | undefined,
  key: Slot<T>,
  value: T | undefined,
): unknown[] | undefined {
  if (entries === undefined) return value === undefined ? undefined : [key, value];
  for (let i = 0; i < entries.length; i += 2) {
    if (entries[i] !== key) continue;
    if (value === undefined) entries.splice(i, 2);
    else entries[i + 1] = value;
    return entries;
  }
  if (value !== undefined) entries.push(key, value);
  return entries;
}

/**
 * A call's slots: keys and values interleaved in one small array (a call holds a handful at most), made on
 * the first `set`. Reads of an empty store cost one comparison. (The agent call's frame holds the same array
 * itself: a base class would cost every call a constructor more.)
 */
export class Slots {
  #entries: unknown[] | undefined = undefined;

  get<T>(key: Slot<T>): T | undefined {
    return slotOf(this.#entries, key);
  }

  set<T>(key: Slot<T>, value: T | undefined): void {
    this.#entries = withSlot(this.#entries, key, value);
  }
}

/** The three hook kinds. */
export type HookKind = 'agentCall' | 'modelCall' | 'toolCall';

/** A hook's `next`: runs the rest of the chain with this context (or a changed one) and gives its result. */
export type Next<C, R> = (context?: C) => R;

/** One hook of a chain, prepared once: how to call it. */
export interface ChainLink {
  readonly interceptor: { readonly name: string };
  readonly hook: (context: unknown, next: Next<unknown, unknown>) => unknown;
  /** A generator function: its `next` gives steps to `yield*`. */
  readonly steps: boolean;
}

const GeneratorFunction = Object.getPrototypeOf(function* () {}).constructor as unknown;

/** True for a `function*` (a steps hook). */
export function isGeneratorFunction(fn: unknown): boolean {
  return typeof fn === 'function' && (fn as object).constructor === GeneratorFunction;
}

/** The links of `interceptors` that have a `kind` hook, in order (outermost first). */
export function linksOf(interceptors: readonly object[], kind: HookKind): ChainLink[] {
  const links: ChainLink[] = [];
  for (const interceptor of interceptors) {
    const hook = (interceptor as Record<string, unknown>)[kind];
    if (typeof hook !== 'function') continue;
    links.push({
      interceptor: interceptor as { name: string },
      hook: hook as ChainLink['hook'],
      steps: isGeneratorFunction(hook),
    });
  }
  return links;
}

/** Checks an interceptor a user gives: an object with a name and at least one hook, each a function. */
export function checkInterceptor(owner: string, value: unknown): void {
  if (value === null || typeof value !== 'object') {
    throw new ConfigurationError({
      message: `${owner}: an interceptor is an object { name, agentCall?, modelCall?, toolCall? }, got ${value === null ? 'null' : typeof value}`,
    });
  }
  const name = (value as { name?: unknown }).name;
  if (typeof name !== 'string' || name === '') {
    throw new ConfigurationError({ message: `${owner}: an interceptor needs a name (a non-empty string)` });
  }
  const steps = (value as { steps?: unknown }).steps;
  if (steps !== undefined && typeof steps !== 'boolean') {
    throw new ConfigurationError({
      message: `${owner}: interceptor ${name}: steps must be true or false, got ${typeof steps}`,
    });
  }
  let hooks = 0;
  for (const kind of ['agentCall', 'modelCall', 'toolCall'] as const) {
    const hook = (value as Record<string, unknown>)[kind];
    if (hook === undefined) continue;
    if (typeof hook !== 'function') {
      throw new ConfigurationError({
        message: `${owner}: interceptor ${name}: ${kind} must be a function, got ${typeof hook}`,
      });
    }
    // Said to be steps, a hook that is not a generator function would be given the wrong `next`.
    if (steps === true && !isGeneratorFunction(hook)) {
      throw new ConfigurationError({
        message: `${owner}: interceptor ${name} says steps: true, but its ${kind} is not a generator function (function*)`,
      });
    }
    hooks++;
  }
  if (hooks === 0) {
    throw new ConfigurationError({
      message: `${owner}: interceptor ${name} has none of agentCall, modelCall, toolCall`,
    });
  }
}

/**
 * How a chain's plain-function hooks get what `next` gives: the result itself (`sync`: a sync agent's call)
 * or a promise of it (`async`).
 */
export type ChainMode = 'sync' | 'async';

/**
 * What the call at the end of a streamed model request's chain yields: the model's stream, for the streaming
 * forward that drives the chain to relay; it sends back the reply the stream made (see `driveStreamed`).
 */
export class StreamHandover {
  constructor(readonly stream: unknown) {}
}

/**
 * Runs `links` from `index` around `call`, as steps: each hook gets `context` and a `next` that runs the links
 * after it (a steps hook's `next` gives steps, a plain hook's a value or a promise, by `mode`). An empty chain
 * is the call itself.
 */
export function runChain<C, R>(
  links: readonly ChainLink[],
  index: number,
  context: C,
  call: (context: C) => Steps<R>,
  mode: ChainMode,
): Steps<R> {
  if (index >= links.length) return call(context);
  const link = links[index]!;
  const rest = restOf(links, index, context, call, mode);
  // A steps hook's generator is the link's steps themselves (its body runs once they are driven).
  if (link.steps)
    return link.hook.call(link.interceptor, context, rest as Next<unknown, unknown>) as Steps<R>;
  return plainLinkSteps(link, context, rest, mode);
}

/** The `next` of the hook at `index`: the links after it, once. */
function restOf<C, R>(
  links: readonly ChainLink[],
  index: number,
  context: C,
  call: (context: C) => Steps<R>,
  mode: ChainMode,
): (next: C | undefined) => Steps<R> {
  let called = false;
  return (next) => {
    if (called) {
      throw new ConfigurationError({
        message: `interceptor ${links[index]!.interceptor.name} called next() twice; a hook runs the rest of the chain at most once`,
      });
    }
    called = true;
    return runChain(links, index + 1, next === undefined ? context : next, call, mode);
  };
}

/** A plain-function hook's link as steps: `next` gives the rest's result (sync) or a promise of it (async). */
function* plainLinkSteps<C, R>(
  link: ChainLink,
  context: C,
  rest: (next: C | undefined) => Steps<R>,
  mode: ChainMode,
): Steps<R> {
  if (mode === 'sync') {
    const next = (next?: C) => driveSync(rest(next));
    const output = link.hook.call(link.interceptor, context, next as Next<unknown, unknown>);
    // A promise (an async hook on a sync agent) goes to the sync driver, which refuses it.
    return (isThenable(output) ? yield output : output) as R;
  }
  // An async hook: `next` drives the rest itself, awaiting its promises. What else the rest yields (a stream for
  // the call's driver to relay; a streamed model request's stream) is handed out to the driver of this chain
  // while the hook waits for `next`, and what the driver answers goes back in.
  const channel = new Handovers();
  const next = (next?: C) => channel.drive(rest(next));
  const output = link.hook.call(link.interceptor, context, next as Next<unknown, unknown>);
  if (!isThenable(output)) return output as R;
  const settled = Promise.resolve(output).then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  for (;;) {
    const first = (yield Promise.race([settled, channel.offered()])) as
      | { value: unknown }
      | { error: unknown }
      | { handover: unknown };
    if ('handover' in first) {
      // The driver relays the stream and sends back its reply, which the inner steps get.
      let reply: unknown;
      try {
        reply = yield first.handover;
      } catch (error) {
        channel.fail(error);
        continue;
      }
      channel.answer(reply);
      continue;
    }
    if ('error' in first) throw first.error;
    return first.value as R;
  }
}

/**
 * What steps driven inside an async hook's `next` yield other than promises (a stream to relay, a
 * {@link StreamHandover}): each is offered to the chain's driver, whose answer goes back into the steps.
 */
class Handovers {
  #offer: ((handover: { handover: unknown }) => void) | undefined = undefined;
  #pending: { handover: unknown } | undefined = undefined;
  #answer: { resolve(value: unknown): void; reject(error: unknown): void } | undefined = undefined;

  /** A promise of the next stream handed out (never settles when none is). */
  offered(): Promise<{ handover: unknown }> {
    const pending = this.#pending;
    if (pending !== undefined) {
      this.#pending = undefined;
      return Promise.resolve(pending);
    }
    return new Promise((resolve) => {
      this.#offer = resolve;
    });
  }

  answer(value: unknown): void {
    const answer = this.#answer;
    this.#answer = undefined;
    answer?.resolve(value);
  }

  fail(error: unknown): void {
    const answer = this.#answer;
    this.#answer = undefined;
    answer?.reject(error);
  }

  /** Drives steps, awaiting their promises; a stream handed out waits for the chain's driver to answer it. */
  async drive<R>(steps: Steps<R>): Promise<R> {
    let step = steps.next();
    while (!step.done) {
      const value = step.value;
      let input: unknown;
      let failed = false;
      try {
        input = isThenable(value) ? await value : await this.#handOut(value);
      } catch (error) {
        failed = true;
        input = error;
      }
      step = failed ? steps.throw(input) : steps.next(input);
    }
    return step.value;
  }

  #handOut(handover: unknown): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.#answer = { resolve, reject };
      const offer = this.#offer;
      this.#offer = undefined;
      if (offer !== undefined) offer({ handover });
      else this.#pending = { handover };
    });
  }
}
