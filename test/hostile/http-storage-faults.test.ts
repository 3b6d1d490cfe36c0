import { describeHttpStorageFaults } from '../support/hostile/suites/http-storage-faults.js';

describeHttpStorageFaults('quick', 'test/hostile/http-storage-faults.test.ts');
