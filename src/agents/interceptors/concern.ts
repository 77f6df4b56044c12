import type { AgentBase } from '../agent-base';
import type { Turn } from '../lifecycle/turn';

/**
 * A built-in concern: its interceptor (hooks written as steps, given the call's `Turn` as context) and which of
 * its hooks apply to a call, as `AGENT | MODEL | TOOL` bits of chain-bits.ts (its tool hooks then apply to the
 * tool calls made inside the call and the calls made inside it).
 *
 * Which hooks apply is asked in two parts, so that a call given none of the concerns' options links with a
 * few field reads (chain.ts):
 * - `static(agent)`: the answer for an outermost call of `agent` given none of `callOptions`, from the agent
 *   alone. Asked once per agent and kept until the agent's configuration changes (see `agentKey` in chain.ts:
 *   its hooks, `forward`, `aggregator`, `memory`, `tools`, `durable` and session store). It may read nothing
 *   else; an answer that depends on more (the process's tracer, rules that change over time) adds `PER_CALL`.
 * - `perCall(turn)`: the whole answer for one call, from its options, its enclosing calls and its agent.
 *   Asked only for a call given one of `callOptions` (keys of the call options), made inside another call
 *   when `enclosing` (the answer depends on what the enclosing calls hold), resuming (`turn.decisions`) or
 *   linked again, and for every call when `static` answered `PER_CALL`. A concern without it has the same
 *   answer for every call of an agent.
 *
 * @example A concern of a call option: `{ interceptor, static: () => 0, callOptions: ['timeoutMs'],
 * perCall: (turn) => (turn.given.timeoutMs !== undefined ? AGENT : 0) }`.
 */
export interface BuiltinConcern {
  readonly interceptor: {
    readonly name: string;
    agentCall?(turn: Turn, next: (turn?: Turn) => unknown): unknown;
    modelCall?(context: never, next: (context?: never) => unknown): unknown;
    toolCall?(context: never, next: (context?: never) => unknown): unknown;
  };
  static(agent: AgentBase): number;
  readonly callOptions?: readonly (string | symbol)[];
  readonly enclosing?: boolean;
  perCall?(turn: Turn): number;
}
