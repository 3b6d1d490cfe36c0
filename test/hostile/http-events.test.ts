import { describeHttpEvents } from '../support/hostile/suites/http-events.js';

describeHttpEvents('quick', 'test/hostile/http-events.test.ts');
