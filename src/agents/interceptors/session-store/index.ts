import type { Steps } from '../../../core/steps';
import type { AgentMessage } from '../../../schema/agent-message';
import type { Turn } from '../../lifecycle/turn';
import { AGENT } from '../chain-bits';
import type { BuiltinConcern } from '../concern';
import { SESSION_STATE } from '../slots';
import { HELD_SESSION, type SessionState } from './commit';
import { bindingFor, type SessionHold, sessionBindingOf } from './persist';

/*
 * Sessions kept in a store (`memory: { store }`), as an interceptor: the outermost call of an agent with a
 * store (no call of an agent with one encloses it) takes its session's lease and loads the session before the
 * rest of the call runs, and commits what the call changed in every memory of the tree as one turn once it
 * returned (an interrupt reply too: what the call did before it stopped is kept); the lease is released when
 * the call ends, however it ends (persist.ts, lease.ts). A durable call commits earlier, with its journal's
 * turn id, before it records its outcome (`commitSession`, commit.ts).
 */

export { commitSession, HELD_SESSION, type SessionState } from './commit';

const interceptor = {
  name: 'session store',

  *agentCall(turn: Turn, next: () => Steps<AgentMessage>): Steps<AgentMessage> {
    const { agent } = turn;
    const given = turn.given[HELD_SESSION as unknown as string] as SessionHold | undefined;
    const binding = bindingFor(agent, turn.parent)!;
    const hold =
      given ?? (yield* binding.begin(agent, turn.sessionKey, turn.options.sessionId, turn.options.signal));
    const state: SessionState = { hold, committed: false };
    turn.set(SESSION_STATE, state);
    try {
      const reply = yield* next();
      if (!state.committed) {
        yield* binding.commit(agent, hold, { release: given === undefined });
        state.committed = true;
      }
      return reply;
    } catch (error) {
      // Committed, then failed (a durable call's journal could not be finished): the memories are taken back,
      // so the next call reloads the session rather than trusting what this process holds.
      if (state.committed) binding.stale(hold);
      throw error;
    } finally {
      if (given === undefined) binding.release(hold);
    }
  },
};

export const sessionStore: BuiltinConcern = {
  interceptor: interceptor as BuiltinConcern['interceptor'],
  // An outermost call of an agent with `memory: { store }`; inside another call, unless that one persists.
  static: (agent) => (sessionBindingOf(agent) !== undefined ? AGENT : 0),
  callOptions: [HELD_SESSION],
  enclosing: true,
  perCall: (turn) =>
    bindingFor(turn.agent, turn.parent) !== undefined ||
    turn.given[HELD_SESSION as unknown as string] !== undefined
      ? AGENT
      : 0,
};
