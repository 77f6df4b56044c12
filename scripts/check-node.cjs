// Stops `npm test`, `npm run demo` and the test runners at once, in one line, on a Node.js release the
// package does not support, instead of minutes of warnings and failures (Node 20 ends the suite in a
// segmentation fault). Run as the `pre` script of those commands; plain CommonJS and old syntax, so that
// every Node that can start npm can run it. The supported majors: package.json's engines, the LTS lines CI runs.
'use strict';

const SUPPORTED = [22, 24];

const version = process.versions.node;
const major = Number(version.split('.')[0]);
if (!(major >= SUPPORTED[0])) {
  process.stderr.write(
    `lagent-ts needs Node.js ${SUPPORTED.join(' or ')} (this is Node.js ${version}): switch Node (nvm install ${SUPPORTED[0]}) and run it again.\n`,
  );
  process.exit(1);
}
