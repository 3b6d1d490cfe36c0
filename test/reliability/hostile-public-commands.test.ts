import { describePublicCommands } from '../support/hostile/suites/public-commands.js';

describePublicCommands('full', 'test/reliability/hostile-public-commands.test.ts');
