/**
 * The research plan: a graph of sub-questions (`nodes`) whose `edges` say which answers a question needs
 * first. Validated with zod: ids unique, edges between known nodes, no cycle.
 */
import { JSONParser } from 'lagent-ts';
import { z } from 'zod';

/** The graph's shape, as the model is asked to write it. */
const shape = z.object({
  nodes: z
    .array(
      z.object({
        id: z.string().min(1).describe('A short id, e.g. "n1"'),
        question: z.string().min(1).describe('A sub-question one web search can answer'),
      }),
    )
    .min(1)
    .describe('The sub-questions'),
  edges: z
    .array(
      z.object({
        from: z.string().describe('The id of the question answered first'),
        to: z.string().describe('The id of the question that needs its answer'),
      }),
    )
    .default([])
    .describe('Which answers a question needs first'),
});

/** A validated research graph. */
export type ResearchGraph = z.output<typeof shape>;

/** A node's id and question. */
export type ResearchNode = ResearchGraph['nodes'][number];

/** The graph's problems, as sentences: duplicate ids, unknown ids in edges, a cycle. Empty when valid. */
export function graphProblems(graph: ResearchGraph): string[] {
  const problems: string[] = [];
  const ids = new Set<string>();
  for (const node of graph.nodes) {
    if (ids.has(node.id)) problems.push(`node id "${node.id}" is used twice`);
    ids.add(node.id);
  }
  const known = [...ids].map((id) => `"${id}"`).join(', ');
  for (const edge of graph.edges) {
    for (const end of [edge.from, edge.to]) {
      if (!ids.has(end))
        problems.push(`edge ${edge.from} -> ${edge.to} names unknown node "${end}" (known: ${known})`);
    }
  }
  if (problems.length > 0) return problems;
  const cycle = findCycle(graph);
  if (cycle) problems.push(`the edges form a cycle: ${cycle.join(' -> ')}`);
  return problems;
}

/** A cycle of node ids (first id repeated at the end), or undefined. */
function findCycle(graph: ResearchGraph): string[] | undefined {
  const children = new Map<string, string[]>(graph.nodes.map((node) => [node.id, []]));
  for (const edge of graph.edges) children.get(edge.from)!.push(edge.to);
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (id: string): string[] | undefined => {
    if (state.get(id) === 'done') return undefined;
    if (state.get(id) === 'open') return [...path.slice(path.indexOf(id)), id];
    state.set(id, 'open');
    path.push(id);
    for (const child of children.get(id)!) {
      const cycle = visit(child);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(id, 'done');
    return undefined;
  };
  for (const node of graph.nodes) {
    const cycle = visit(node.id);
    if (cycle) return cycle;
  }
  return undefined;
}

/** The schema of a valid graph: the shape, then {@link graphProblems}. */
export const researchGraphSchema = shape.superRefine((graph, context) => {
  for (const message of graphProblems(graph)) context.addIssue({ code: 'custom', message });
});

/** Reads the planner's reply: JSON in the graph's shape, validated; a `ParseError` says what is wrong. */
export function graphParser(): JSONParser<typeof researchGraphSchema> {
  return new JSONParser({ schema: researchGraphSchema, addsFormatInstruction: false });
}

/** The ids of each node's parents (the nodes whose answers it needs). */
export function parentsOf(graph: ResearchGraph): Map<string, string[]> {
  const parents = new Map<string, string[]>(graph.nodes.map((node) => [node.id, []]));
  for (const edge of graph.edges) parents.get(edge.to)!.push(edge.from);
  return parents;
}

/** The nodes by level: level 0 needs no answer, level k needs answers of level < k only. */
export function levelsOf(graph: ResearchGraph): ResearchNode[][] {
  const parents = parentsOf(graph);
  const level = new Map<string, number>();
  const depth = (id: string): number => {
    const known = level.get(id);
    if (known !== undefined) return known;
    const value = Math.max(-1, ...parents.get(id)!.map(depth)) + 1;
    level.set(id, value);
    return value;
  };
  const levels: ResearchNode[][] = [];
  for (const node of graph.nodes) {
    const index = depth(node.id);
    levels[index] ??= [];
    levels[index].push(node);
  }
  return levels;
}

/** The graph as lines of text: each level's questions, with the ids they need. */
export function describeGraph(graph: ResearchGraph): string[] {
  const parents = parentsOf(graph);
  return levelsOf(graph).flatMap((nodes, index) => [
    `level ${index}:`,
    ...nodes.map((node) => {
      const needs = parents.get(node.id)!;
      return `  ${node.id}: ${node.question}${needs.length > 0 ? `  (needs ${needs.join(', ')})` : ''}`;
    }),
  ]);
}
