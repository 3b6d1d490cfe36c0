import { describeHttpHeaders } from '../support/hostile/suites/http-headers.js';

describeHttpHeaders('quick', 'test/hostile/http-headers.test.ts');
