import { AGENT_NODE, type AgentNode, checkAgent, renderTree } from './agent-tree';

/**
 * An ordered container of sub-agents (like `nn.ModuleList`). It has no memory and is not callable; its
 * agents appear in the owner's state dict as `name.0.memory`, `name.1.memory`, ...
 *
 * @example
 * class Panel extends Agent {
 *   experts = new AgentList([new Agent({ llm }), new Agent({ llm })]);
 * }
 */
export class AgentList<T extends AgentNode = AgentNode> implements AgentNode, Iterable<T> {
  readonly [AGENT_NODE] = 'container' as const;
  readonly #items: T[] = [];

  constructor(agents: Iterable<T> = []) {
    for (const agent of agents) this.push(agent);
  }

  get length(): number {
    return this.#items.length;
  }

  /** The agent at `index` (negative counts from the end). */
  get(index: number): T | undefined {
    return this.#items.at(index);
  }

  push(...agents: T[]): number {
    for (const agent of agents) this.#items.push(checkAgent(agent, 'AgentList.push'));
    return this.#items.length;
  }

  [Symbol.iterator](): Iterator<T> {
    return this.#items[Symbol.iterator]();
  }

  children(): [string, AgentNode][] {
    return this.#items.map((agent, i) => [String(i), agent]);
  }

  toString(): string {
    return renderTree('AgentList', this.children());
  }
}
