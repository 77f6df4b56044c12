import type { Steps } from '../../../core/steps';
import type { Turn } from '../../lifecycle/turn';
import { SESSION_STATE } from '../slots';
import type { SessionHold } from './persist';

/** A call's hold on its stored session, and whether its turn was committed. */
export interface SessionState {
  readonly hold: SessionHold;
  committed: boolean;
}

/**
 * The call option of a call made inside the lease of another call of its agent's session (a durable call
 * recovered first): it takes no lease of its own, commits without releasing, and leaves the release to that
 * call (internal).
 */
export const HELD_SESSION: unique symbol = Symbol('lagent-ts.heldSession');

/**
 * Steps that commit the call's turn now (a durable call, before it records its outcome), keeping the lease
 * (released when the call ends): `turnId` names the turn, `version` is the one to commit at. Nothing without a
 * stored session, or once committed.
 */
export function* commitSession(
  turn: Turn,
  options: { turnId?: string | undefined; version?: number | undefined },
): Steps<void> {
  const state = turn.get(SESSION_STATE);
  if (state === undefined || state.committed) return;
  yield* state.hold.binding.commit(turn.agent, state.hold, { ...options, release: false });
  state.committed = true;
}
