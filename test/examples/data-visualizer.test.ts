import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { type ProcessResult, runProcess } from '../helpers/processes';

const root = fileURLToPath(new URL('../..', import.meta.url));
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const hasMatplotlib = spawnSync(PYTHON, ['-c', 'import matplotlib'], { stdio: 'ignore' }).status === 0;

/** Variables that would send the example to real services; the test runs it on the fakes and the mock. */
const REAL_SERVICES = [
  'OPENAI_API_KEY',
  'OPENAI_BASE_URL',
  'BING_API_KEY',
  'BRAVE_API_KEY',
  'SERPER_API_KEY',
  'TENCENTCLOUD_SECRET_ID',
  'TENCENTCLOUD_SECRET_KEY',
  'LAGENT_SEARCHER',
];

/**
 * Runs the example as its own process (as `npx tsx examples/data-visualizer.ts` does). It must exit by
 * itself: a fake server, worker or interpreter left running would keep it alive until the time limit.
 * The environment (with the suite's LAGENT_TEST_RUN marker) is passed on.
 */
function runExample(python: string): Promise<ProcessResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, LAGENT_PYTHON: python };
  for (const name of REAL_SERVICES) delete env[name];
  return runProcess(process.execPath, ['--import', 'tsx', 'examples/data-visualizer.ts'], {
    cwd: root,
    env,
    timeoutMs: 50_000,
  });
}

/** What both runs print about the research half. */
function expectResearch(stdout: string): void {
  // The browser searched the fake Bing API and read the GDP page it linked to.
  expect(stdout).toMatch(/web: a local fake of Bing's search API and its pages at http:\/\/127\.0\.0\.1:\d+/);
  expect(stdout).toMatch(
    /fake web: 1 search request\(s\) \("China's GDP over the past 5 years"\), 1 page\(s\) read \(\/pages\/china-gdp\)/,
  );
  // The page's text (its table) came back through the executor.
  expect(stdout).toContain('rounded World Bank figures');
  expect(stdout).toMatch(/2019\\n14\.28\\n2020\\n14\.69/);
}

describe('examples/data-visualizer.ts', () => {
  it.skipIf(!hasMatplotlib)(
    'searches the fake web, hands the page figures to the charter and draws a PNG with Python',
    async () => {
      const { code, stdout, stderr } = await runExample(PYTHON);
      expect(stderr).not.toMatch(/Error|at .+:\d+:\d+/);
      expect(code).toBe(0);
      expectResearch(stdout);
      expect(stdout).toMatch(/python: Python 3\.\d+\.\d+ with matplotlib/);
      // The charter received the researcher's figures and plotted exactly them.
      const charter = stdout.slice(stdout.indexOf('* charter memory, researcher:'));
      expect(charter).toContain('- 2019: 14.28');
      expect(charter).toContain('- 2023: 17.79');
      expect(charter).toContain('gdp = [14.28,14.69,17.82,17.88,17.79]');
      expect(stdout).toMatch(/charter: Final Answer: the line graph of China's GDP is drawn/);
      const charts = /chart\(s\): (.+)/.exec(stdout)?.[1]?.split(', ') ?? [];
      expect(charts.length).toBeGreaterThan(0);
      try {
        for (const chart of charts) {
          expect(chart).toMatch(/\.png$/);
          const png = readFileSync(chart);
          expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
          expect(png.length).toBeGreaterThan(1000);
        }
      } finally {
        // The figures live in <workDir>/session-0/; remove the example's working directory.
        for (const chart of charts) rmSync(dirname(dirname(chart)), { recursive: true, force: true });
      }
    },
    60_000,
  );

  it('without Python runs the research half and says what the chart is waiting for', async () => {
    const { code, stdout, stderr } = await runExample('/nonexistent/python3');
    expect(stderr).not.toMatch(/Error|at .+:\d+:\d+/);
    expect(code).toBe(0);
    expectResearch(stdout);
    expect(stdout).toContain('python: not available, so only the research half runs');
    expect(stdout).toMatch(/researcher: From http:\/\/127\.0\.0\.1:\d+\/pages\/china-gdp/);
    expect(stdout).toContain('The chart half is waiting for Python 3 with matplotlib: install it');
    expect(stdout).not.toContain('* charter memory');
  }, 60_000);
});
