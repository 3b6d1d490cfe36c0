import { describeHttpStorageFaults } from '../support/hostile/suites/http-storage-faults.js';

describeHttpStorageFaults('full', 'test/reliability/hostile-http-storage-faults.test.ts');
