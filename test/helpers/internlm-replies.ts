/** Scripted model replies in InternLM's tool-call format, for the mock models of the agent tests. */

/** A reply that calls the code interpreter with `source`. */
export const interpreterCall = (source: string, thought = 'Let me compute.') =>
  `${thought}<|action_start|><|interpreter|>\n${source}<|action_end|>\n`;

/** A reply that calls the plugin `name` (a tool, or `Toolkit.api`) with `parameters`. */
export const pluginCall = (name: string, parameters: object, thought = 'Let me use a tool.') =>
  `${thought}<|action_start|><|plugin|>\n${JSON.stringify({ name, parameters })}<|action_end|>\n`;
