import { describeHttpEvents } from '../support/hostile/suites/http-events.js';

describeHttpEvents('full', 'test/reliability/hostile-http-events.test.ts');
