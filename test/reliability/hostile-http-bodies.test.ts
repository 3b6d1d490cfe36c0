import { describeHttpBodies } from '../support/hostile/suites/http-bodies.js';

describeHttpBodies('full', 'test/reliability/hostile-http-bodies.test.ts');
