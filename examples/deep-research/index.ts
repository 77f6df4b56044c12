/** The deep-research example: the agent, its graph, its research web and its scripted model. */
export {
  citedNumbers,
  DeepResearchAgent,
  type DeepResearchOptions,
  type NodeResult,
  type ResearchPageRead,
  ResearchPlanner,
  type ResearchProgress,
  type ResearchReport,
  type ResearchSource,
} from './deep-research-agent';
export {
  describeGraph,
  graphParser,
  graphProblems,
  levelsOf,
  type ResearchGraph,
  researchGraphSchema,
} from './graph';
export { main } from './main';
export { EXAMPLE_GRAPH, EXAMPLE_QUESTION, researchScript } from './mock-script';
export { RESEARCH_PAGES, type ResearchWeb, startResearchWeb } from './research-web';
export { startDeepResearch } from './setup';
