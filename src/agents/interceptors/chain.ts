import { type ChainLink, linksOf } from '../../core/interceptors';
import type { AgentBase } from '../agent-base';
import { CHAIN } from '../agent-symbols';
import type { Turn } from '../lifecycle/turn';
import { approvals } from './approvals';
import { budget } from './budget';
import { AGENT, MODEL, PER_CALL, TOOL } from './chain-bits';
import type { BuiltinConcern } from './concern';
import { durable } from './durable';
import { DURABLE } from './durable/option';
import { guardrails } from './guardrails';
import { hooks } from './hooks';
import { recall } from './recall';
import { sessionStore } from './session-store';
import { SESSION_BINDING } from './session-store/persist';
import { summaries } from './summaries';
import { timeout } from './timeout';
import { tracing } from './tracing';
import { workingMemory } from './working-memory';

/*
 * The order of the built-in concerns, outermost first: the one place it is fixed (ARCHITECTURE.md says why
 * each runs where). Users' interceptors run inside all of them, outermost (the enclosing calls') first. Each
 * concern says which of its hooks apply to the calls of an agent (`static`, kept per agent) and, when a call's
 * options or enclosing calls may change that, to one call (`perCall`; see concern.ts): a call to which none
 * applies runs without a chain.
 */
export const BUILTIN_ORDER: readonly BuiltinConcern[] = [
  timeout,
  sessionStore,
  tracing,
  summaries,
  workingMemory,
  durable,
  recall,
  budget,
  approvals,
  hooks,
  guardrails,
];

/** The concerns with a `perCall`: all are asked for a call resuming or linked again. */
let WITH_PER_CALL = 0;
/** The concerns asked for every call made inside another. */
let ENCLOSING = 0;
/** The call options some concern's `perCall` looks at, each with the concerns (bits by position) that do. */
const KEYS: PropertyKey[] = [];
const ASKS: number[] = [];
for (let i = 0; i < BUILTIN_ORDER.length; i++) {
  const concern = BUILTIN_ORDER[i]!;
  if (concern.perCall === undefined) continue;
  WITH_PER_CALL |= 1 << i;
  if (concern.enclosing === true) ENCLOSING |= 1 << i;
  for (const key of concern.callOptions ?? []) {
    const at = KEYS.indexOf(key);
    if (at === -1) {
      KEYS.push(key);
      ASKS.push(1 << i);
    } else ASKS[at]! |= 1 << i;
  }
}

/*
 * The keys one by one, each read at a site of its own: V8 then reads each as fast as a named property (one
 * site reading many keys is several times slower). Keys past the eighth are read in a loop.
 */
const ABSENT = Symbol('lagent-ts.noOption');
while (KEYS.length < 8) {
  KEYS.push(ABSENT);
  ASKS.push(0);
}
type Eight<T> = [T, T, T, T, T, T, T, T];
const [K0, K1, K2, K3, K4, K5, K6, K7] = KEYS as Eight<symbol>;
const [A0, A1, A2, A3, A4, A5, A6, A7] = ASKS as Eight<number>;

/** The concerns whose call options are among `given` (a call's options, as given). */
function askedBy(given: Readonly<Record<PropertyKey, unknown>>): number {
  let ask = 0;
  if (given[K0] !== undefined) ask |= A0;
  if (given[K1] !== undefined) ask |= A1;
  if (given[K2] !== undefined) ask |= A2;
  if (given[K3] !== undefined) ask |= A3;
  if (given[K4] !== undefined) ask |= A4;
  if (given[K5] !== undefined) ask |= A5;
  if (given[K6] !== undefined) ask |= A6;
  if (given[K7] !== undefined) ask |= A7;
  for (let k = 8; k < KEYS.length; k++) if (given[KEYS[k] as symbol] !== undefined) ask |= ASKS[k]!;
  return ask;
}

/**
 * What the concerns' `static` answered for an agent, with the configuration they read: kept on the agent
 * (`CHAIN`) and made again when the agent's configuration differs (hooks registered or removed, another
 * `forward`, `aggregator`, `memory` or `tools` set, a store attached...).
 */
interface AgentChain {
  readonly hooks: readonly unknown[];
  readonly forward: unknown;
  readonly aggregator: unknown;
  readonly memory: unknown;
  readonly tools: unknown;
  readonly durable: unknown;
  readonly binding: unknown;
  /** Each concern's answer, by position (without `PER_CALL`). */
  readonly bits: readonly number[];
  readonly agentMask: number;
  readonly modelMask: number;
  readonly toolMask: number;
  /** The concerns whose `perCall` is asked on every call of the agent. */
  readonly perCall: number;
}

type Configured = AgentBase & { [DURABLE]?: unknown; [SESSION_BINDING]?: unknown; forward?: unknown };

function agentChainOf(agent: Configured): AgentChain {
  const known = agent[CHAIN] as AgentChain | undefined;
  if (
    known !== undefined &&
    known.hooks === agent.hooks &&
    known.forward === agent.forward &&
    known.aggregator === agent.aggregator &&
    known.memory === agent.memory &&
    known.tools === agent.tools &&
    known.durable === agent[DURABLE] &&
    known.binding === agent[SESSION_BINDING]
  ) {
    return known;
  }
  const bits: number[] = [];
  let agentMask = 0;
  let modelMask = 0;
  let toolMask = 0;
  let perCall = 0;
  for (let i = 0; i < BUILTIN_ORDER.length; i++) {
    const kinds = BUILTIN_ORDER[i]!.static(agent);
    bits.push(kinds & ~PER_CALL);
    if ((kinds & AGENT) !== 0) agentMask |= 1 << i;
    if ((kinds & MODEL) !== 0) modelMask |= 1 << i;
    if ((kinds & TOOL) !== 0) toolMask |= 1 << i;
    if ((kinds & PER_CALL) !== 0) perCall |= 1 << i;
  }
  const made: AgentChain = {
    hooks: agent.hooks,
    forward: agent.forward,
    aggregator: agent.aggregator,
    memory: agent.memory,
    tools: agent.tools,
    durable: agent[DURABLE],
    binding: agent[SESSION_BINDING],
    bits,
    agentMask,
    modelMask,
    toolMask,
    perCall,
  };
  agent[CHAIN] = made;
  return made;
}

const NONE: readonly ChainLink[] = Object.freeze([]) as readonly ChainLink[];

/** Built-in links by kind and mask (a handful of combinations occur). */
const cached: Map<number, readonly ChainLink[]>[] = [new Map(), new Map(), new Map()];

const KINDS = ['agentCall', 'modelCall', 'toolCall'] as const;

function builtinLinks(kind: 0 | 1 | 2, mask: number): readonly ChainLink[] {
  if (mask === 0) return NONE;
  let links = cached[kind]!.get(mask);
  if (links === undefined) {
    const chosen = BUILTIN_ORDER.filter((_, i) => (mask & (1 << i)) !== 0).map(
      (concern) => concern.interceptor,
    );
    links = Object.freeze(linksOf(chosen, KINDS[kind]));
    cached[kind]!.set(mask, links);
  }
  return links;
}

/** Users' links of one kind, by the list of interceptors in force (the same list for many calls). */
const userLinks = new WeakMap<readonly object[], (readonly ChainLink[])[]>();

function usersOf(interceptors: readonly object[], kind: 0 | 1 | 2): readonly ChainLink[] {
  if (interceptors.length === 0) return NONE;
  let links = userLinks.get(interceptors);
  if (links === undefined) {
    links = KINDS.map((name) => Object.freeze(linksOf(interceptors, name)));
    userLinks.set(interceptors, links);
  }
  return links[kind]!;
}

function join(builtins: readonly ChainLink[], users: readonly ChainLink[]): readonly ChainLink[] {
  if (users.length === 0) return builtins;
  if (builtins.length === 0) return users;
  return [...builtins, ...users];
}

/** What {@link linkChain} fills in: the call's hooks by kind. */
export interface Linked {
  agentLinks: readonly ChainLink[];
  modelLinks: readonly ChainLink[];
  toolLinks: readonly ChainLink[];
  /** The built-in concerns whose tool hooks are in force in the call (inherited by the calls made inside). */
  toolMask: number;
}

/**
 * Fills in the hooks of a call: the built-in concerns that apply to it, then the users' interceptors in force.
 * Written into the call itself (no object per call: most calls have no hooks at all). The concerns' answers for
 * the agent are kept; only those whose answer may differ for this call are asked (see concern.ts): `again`, a
 * call linked a second time (its state changed), asks every one with a `perCall`.
 */
export function linkChain(turn: Turn & Linked, again = false): void {
  const known = agentChainOf(turn.agent as Configured);
  const parent = turn.parent as Turn | undefined;
  let agentMask = known.agentMask;
  let modelMask = known.modelMask;
  let toolMask = known.toolMask;
  let ask = known.perCall;
  if (again || turn.decisions !== undefined) ask = WITH_PER_CALL;
  else {
    if (parent !== undefined) ask |= ENCLOSING;
    ask |= askedBy(turn.given);
  }
  for (let i = 0; ask !== 0; i++, ask >>>= 1) {
    if ((ask & 1) === 0) continue;
    const kinds = BUILTIN_ORDER[i]!.perCall!(turn);
    if (kinds === known.bits[i]) continue;
    const bit = 1 << i;
    agentMask = (kinds & AGENT) !== 0 ? agentMask | bit : agentMask & ~bit;
    modelMask = (kinds & MODEL) !== 0 ? modelMask | bit : modelMask & ~bit;
    toolMask = (kinds & TOOL) !== 0 ? toolMask | bit : toolMask & ~bit;
  }
  if (parent !== undefined) toolMask |= parent.toolMask;
  const users = turn.interceptors;
  turn.toolMask = toolMask;
  if (users.length === 0) {
    turn.agentLinks = builtinLinks(0, agentMask);
    turn.modelLinks = builtinLinks(1, modelMask);
    turn.toolLinks = builtinLinks(2, toolMask);
    return;
  }
  turn.agentLinks = join(builtinLinks(0, agentMask), usersOf(users, 0));
  turn.modelLinks = join(builtinLinks(1, modelMask), usersOf(users, 1));
  turn.toolLinks = join(builtinLinks(2, toolMask), usersOf(users, 2));
}
