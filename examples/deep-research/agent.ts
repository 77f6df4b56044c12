/**
 * The deep-research agent as an agent module for the CLI:
 *
 *   NODE_OPTIONS='--import tsx' npx lagent-ts serve --agent examples/deep-research/agent.ts
 *
 * The default export builds it on the configured model (the scripted mock unless OPENAI_API_KEY /
 * OPENAI_BASE_URL is set) against the local research web, which this module starts and which ends with the
 * process.
 */
import type { DeepResearchAgent } from './deep-research-agent';
import { type DeepResearchSetup, startDeepResearch } from './setup';

const started: DeepResearchSetup[] = [];

/** A new deep-research agent and its research web. */
export async function agent(): Promise<DeepResearchAgent> {
  const setup = await startDeepResearch();
  started.push(setup);
  return setup.agent;
}

/** Stops the research webs of the agents this module made (a host that ends early may call it). */
export async function close(): Promise<void> {
  await Promise.all(started.splice(0).map((setup) => setup.close()));
}

export default agent;
