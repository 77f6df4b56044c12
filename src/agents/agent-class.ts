import type { AgentBase } from './agent-base';

/**
 * A class whose instances are agents of kind `A` (`Agent`, `AsyncAgent`, `StreamingAgent`,
 * `AsyncStreamingAgent` or a subclass).
 *
 * The variants of a composite agent (sync, async, streaming, async streaming) are made one way: a class
 * factory over the variant's base class writes the fields, the constructor and the methods they share once
 * (`withMembers` for `Sequential`, `internLMAgentClass`, `reactAgentClass`, `functionCallingAgentClass`),
 * and each variant class adds only its `forward`: the variant's driver over the loop's steps, which are
 * written once too. What differs between variants (the inner agent's class, the executor's class) comes in
 * as the factory's arguments.
 */
// A mixin's base constructor must take any arguments.
export type AgentClass<A extends AgentBase> = abstract new (...args: any[]) => A;
