/**
 * The agents that have an event emitter (held weakly). An agent's event also goes to each of them that holds
 * the agent in its tree (see `emitEvent` in `lifecycle/events.ts`); while there are none, events skip the lookup.
 */
export const observers = {
  count: 0,
  agents: new Set<WeakRef<object>>(),
  add(agent: object): void {
    this.agents.add(new WeakRef(agent));
    this.count = this.agents.size;
  },
};
