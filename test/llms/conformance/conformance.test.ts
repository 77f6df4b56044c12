import { conformanceSuite } from './suite';
import { targets } from './targets';

for (const target of targets) conformanceSuite(target);
