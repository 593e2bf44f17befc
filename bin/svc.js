#!/usr/bin/env node
require('../dist/apps/svc-cli/src/main.js');
