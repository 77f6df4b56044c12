import type { Turn } from '../lifecycle/turn';

/**
 * A built-in concern: its interceptor (hooks written as steps, given the call's `Turn` as context) and which of
 * its hooks apply to a call (`AGENT | MODEL | TOOL` bits of chain.ts; its tool hooks then apply to the tool
 * calls made inside the call and the calls made inside it). Asked once per call: keep it cheap.
 */
export interface BuiltinConcern {
  readonly interceptor: {
    readonly name: string;
    agentCall?(turn: Turn, next: (turn?: Turn) => unknown): unknown;
    modelCall?(context: never, next: (context?: never) => unknown): unknown;
    toolCall?(context: never, next: (context?: never) => unknown): unknown;
  };
  applies(turn: Turn): number;
}
