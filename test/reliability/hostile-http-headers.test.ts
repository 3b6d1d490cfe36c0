import { describeHttpHeaders } from '../support/hostile/suites/http-headers.js';

describeHttpHeaders('full', 'test/reliability/hostile-http-headers.test.ts');
