import { pathToFileURL } from 'node:url';
import type { AgentMessage } from 'lagent-ts';

/** True when the file with this `import.meta.url` is the script node was started with. */
export function isMain(url: string): boolean {
  const entry = process.argv[1];
  return entry !== undefined && (url === pathToFileURL(entry).href || url === entry);
}

/** A section title, with an optional line under it. */
export function heading(title: string, detail?: string): void {
  console.log(`\n=== ${title} ===`);
  if (detail) console.log(detail);
}

/** A message as its sender and content, plus `formatted` when it has one. */
export function show(label: string, message: AgentMessage): void {
  console.log(
    `${label}: [${message.sender}] ${typeof message.content === 'string' ? message.content : JSON.stringify(message.content)}`,
  );
  if (message.formatted !== null)
    console.log(`  formatted: ${JSON.stringify(message.formatted, null, 2).replace(/\n/g, '\n  ')}`);
}
