import { describePublicCommands } from '../support/hostile/suites/public-commands.js';

describePublicCommands('quick', 'test/hostile/public-commands.test.ts');
