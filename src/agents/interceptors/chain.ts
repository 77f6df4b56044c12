import { type ChainLink, linksOf } from '../../core/interceptors';
import type { Turn } from '../lifecycle/turn';
import { approvals } from './approvals';
import { budget } from './budget';
import { AGENT, MODEL, TOOL } from './chain-bits';
import type { BuiltinConcern } from './concern';
import { durable } from './durable';
import { guardrails } from './guardrails';
import { hooks } from './hooks';
import { recall } from './recall';
import { sessionStore } from './session-store';
import { summaries } from './summaries';
import { timeout } from './timeout';
import { tracing } from './tracing';
import { workingMemory } from './working-memory';

/*
 * The order of the built-in concerns, outermost first: the one place it is fixed (ARCHITECTURE.md says why
 * each runs where). Users' interceptors run inside all of them, outermost (the enclosing calls') first. Each
 * concern says, per call, which of its hooks apply (`applies`): a call to which none does runs without a chain.
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
 * Written into the call itself (no object per call: most calls have no hooks at all).
 */
export function linkChain(turn: Turn & Linked): void {
  let agentMask = 0;
  let modelMask = 0;
  let toolMask = (turn.parent as Turn | undefined)?.toolMask ?? 0;
  for (let i = 0; i < BUILTIN_ORDER.length; i++) {
    const kinds = BUILTIN_ORDER[i]!.applies(turn);
    if (kinds === 0) continue;
    if ((kinds & AGENT) !== 0) agentMask |= 1 << i;
    if ((kinds & MODEL) !== 0) modelMask |= 1 << i;
    if ((kinds & TOOL) !== 0) toolMask |= 1 << i;
  }
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
