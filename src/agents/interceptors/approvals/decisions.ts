import { ValidationError } from '../../../schema/errors';
import type { Decision, Interrupt } from '../../../schema/interrupts';

/*
 * The decisions a resumed call holds, and which round of tool calls each one answers. A decision answers the
 * round the call stopped at, once: the round that waited takes the decisions of the resume message, and a
 * later round (in the same call or any later one) never sees them, even when the model server gives its calls
 * the same ids. A durable replay takes the decisions its journal recorded from earlier resumes in the order
 * they were given, each by the first round (in program order) that asks about its id, as the call did when it
 * ran; so a replay after a crash makes the same choices the call made.
 */

/** The decisions of one resumed call (see the file's comment). */
export class ResumeDecisions {
  /** The decisions of the resume message this call was given, by interrupt id. */
  readonly given: ReadonlyMap<string, Decision>;
  /** True once the round that waited took {@link given} (or when nothing was given). */
  answered: boolean;
  /** True once a round that waits for a decision (or a remote agent's) was reached. */
  reached = false;
  /** Decisions of earlier resumes of the call (from its journal) not yet taken by a round, oldest first. */
  readonly #earlier: Map<string, Decision[]> | undefined;

  constructor(given: readonly Decision[], earlier: readonly Decision[] = []) {
    this.given = new Map(given.map((decision) => [decision.id, decision]));
    this.answered = given.length === 0;
    if (earlier.length === 0) return;
    this.#earlier = new Map();
    for (const decision of earlier) {
      const queue = this.#earlier.get(decision.id);
      if (queue === undefined) this.#earlier.set(decision.id, [decision]);
      else queue.push(decision);
    }
  }

  /** The decisions of the resume message, in the order given. */
  get givenList(): Decision[] {
    return [...this.given.values()];
  }

  /** Takes the oldest decision an earlier resume gave for `id` (a later round asking about `id` gets the next). */
  takeEarlier(id: string): Decision | undefined {
    const queue = this.#earlier?.get(id);
    if (queue === undefined) return undefined;
    const decision = queue.shift();
    if (queue.length === 0) this.#earlier!.delete(id);
    return decision;
  }

  /**
   * The round that waited for a decision asks (`waiting`: its interrupt ids that have none yet): it takes the
   * decisions given now, once. A decision for an id that does not wait there is refused with a
   * `ValidationError` naming the ids that do, before anything of the round runs. Undefined when the decisions
   * were taken already (this round is a later one: its calls wait for decisions of their own).
   */
  answer(waiting: readonly string[], owner: string): ReadonlyMap<string, Decision> | undefined {
    this.reached = true;
    if (this.answered) return undefined;
    const unknown = [...this.given.keys()].filter((id) => !waiting.includes(id));
    if (unknown.length > 0) throw unknownDecisions(owner, unknown, waiting);
    this.answered = true;
    return this.given;
  }

  /**
   * The decisions for a remote agent standing at `prefix` in the local tree, with the remote's own ids (the
   * local id after `prefix` and one separator): those earlier resumes gave (taken) and, once, those given now.
   * The decisions given now must then all be for that remote agent.
   */
  forRemote(prefix: string, owner: string): Decision[] {
    this.reached = true;
    const decisions: Decision[] = [];
    if (this.#earlier !== undefined) {
      for (const [id, queue] of this.#earlier) {
        const rest = underPrefix(id, prefix);
        if (rest === undefined) continue;
        for (const decision of queue) decisions.push({ ...decision, id: rest });
        this.#earlier.delete(id);
      }
    }
    if (this.answered) return decisions;
    const mine: Decision[] = [];
    const others: string[] = [];
    for (const decision of this.given.values()) {
      const rest = underPrefix(decision.id, prefix);
      if (rest === undefined) others.push(decision.id);
      else mine.push({ ...decision, id: rest });
    }
    if (mine.length === 0) return decisions;
    if (others.length > 0) throw unknownDecisions(owner, others, [`${prefix}:…`, `${prefix}.…`]);
    this.answered = true;
    return decisions.concat(mine);
  }
}

function unknownDecisions(
  owner: string,
  unknown: readonly string[],
  waiting: readonly string[],
): ValidationError {
  const names = (ids: readonly string[]) => ids.map((id) => JSON.stringify(id)).join(', ');
  return new ValidationError({
    message:
      waiting.length === 0
        ? `${owner}: no call waits for a decision, so the decisions for ${names(unknown)} answer nothing (was the call resumed already?)`
        : `${owner}: no call waits for a decision with the id ${names(unknown)}; the calls that wait: ${names(waiting)}`,
    field: 'decisions',
  });
}

/** The remote id inside a local interrupt id under `prefix` (`prefix.` or `prefix:` then the remote's id). */
export function underPrefix(id: string, prefix: string): string | undefined {
  if (id.length <= prefix.length + 1 || !id.startsWith(prefix)) return undefined;
  const separator = id[prefix.length];
  return separator === '.' || separator === ':' ? id.slice(prefix.length + 1) : undefined;
}

/**
 * Checks that a decision fits the interrupt it answers: a client tool's call (`'client-tool'`) is answered with
 * its `result` or declined; any other interrupt is approved or declined, never given a result. Throws a
 * `ValidationError` otherwise.
 */
export function checkAnswer(owner: string, decision: Decision, kind: Interrupt['kind'] | undefined): void {
  if (!decision.approve) return;
  if (kind === 'client-tool' && decision.result === undefined) {
    throw new ValidationError({
      message: `${owner}: ${JSON.stringify(decision.id)} is a call of a client tool: answer it with its output ({ id, approve: true, result }), or decline it`,
      field: 'decisions',
    });
  }
  if (kind !== 'client-tool' && decision.result !== undefined) {
    throw new ValidationError({
      message: `${owner}: ${JSON.stringify(decision.id)} waits for ${kind === 'check' ? "the caller's check" : 'approval'}, not for a client tool's result: approve or decline it`,
      field: 'decisions',
    });
  }
}

/**
 * The interrupt ids a durable call's journal says it waits for, with their kinds: its last pause's, less those
 * decided since.
 */
export function waitingIn(
  entries: readonly { data: unknown }[],
): Map<string, Interrupt['kind'] | undefined> | undefined {
  let waiting: Map<string, Interrupt['kind'] | undefined> | undefined;
  for (const { data } of entries) {
    const entry = data as { kind?: unknown; result?: unknown };
    if (entry.kind === 'interrupted') {
      // The interrupts the call returned (journals of an earlier layout hold their ids alone).
      const asked = Array.isArray(entry.result) ? (entry.result as unknown[]) : [];
      waiting = new Map(
        asked.map((item) =>
          typeof item === 'string' ? [item, undefined] : [(item as Interrupt).id, (item as Interrupt).kind],
        ),
      );
    } else if (entry.kind === 'resume' && waiting !== undefined) {
      for (const decision of entry.result as Decision[]) waiting.delete(decision.id);
    }
  }
  return waiting;
}

/**
 * Checks the decisions a resume gives a durable call against what its journal says waits (before the call
 * replays anything): a decision for an id that does not wait, or for a pause already answered (by a copy of
 * the session resumed elsewhere), or one that does not fit its interrupt (`checkAnswer`), is a `ValidationError`.
 */
export function checkGiven(
  owner: string,
  given: readonly Decision[],
  waiting: Map<string, Interrupt['kind'] | undefined> | undefined,
): void {
  if (waiting === undefined) return;
  const unknown = given.filter((decision) => !waiting.has(decision.id)).map((decision) => decision.id);
  if (unknown.length > 0) throw unknownDecisions(owner, unknown, [...waiting.keys()]);
  for (const decision of given) checkAnswer(owner, decision, waiting.get(decision.id));
}
