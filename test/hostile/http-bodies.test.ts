import { describeHttpBodies } from '../support/hostile/suites/http-bodies.js';

describeHttpBodies('quick', 'test/hostile/http-bodies.test.ts');
