import { Command, Option } from 'nest-commander';

import { DEFAULT_TEMPLATE, projectNameProblem, scaffoldProject, TemplateName, TEMPLATE_NAMES, TEMPLATES, templateRepository } from '@app/cli-project';
import { CliError, Terminal } from '@app/cli-terminal';
import { readCliEnv } from '@app/svc-client';

import { JsonOptions, oneOf } from '../options';
import { SvcCommand } from '../svc-command';

interface CreateOptions extends JsonOptions {
  template?: TemplateName;
  url?: string;
}

const DEFAULT_PROJECT_NAME = 'agent-platform';

@Command({ name: 'create', arguments: '[name]', description: 'Scaffold a project from a deployment template' })
export class CreateCommand extends SvcCommand<CreateOptions> {
  protected async execute([givenName]: string[], options: CreateOptions, terminal: Terminal): Promise<number> {
    const cwd = process.cwd();
    let template = options.template;
    let name = givenName;
    if (name === undefined) {
      if (!terminal.interactive) {
        throw new CliError('A project name is required in non-interactive mode.', 'Pass it: svc create <name>');
      }
      if (!template && !options.url) {
        template = await terminal.select(
          'Template',
          TEMPLATE_NAMES.map((value) => ({ name: `${value}  ${TEMPLATES[value]}`, value })),
        );
      }
      name = await terminal.input('Project name', {
        default: DEFAULT_PROJECT_NAME,
        validate: (value) => projectNameProblem(value.trim(), cwd) ?? true,
      });
      name = name.trim();
    }
    const repository = options.url ?? templateRepository(readCliEnv().templateBaseUrl, template ?? DEFAULT_TEMPLATE);
    const progress = terminal.progress(`Cloning ${repository}`);
    let created;
    try {
      created = await scaffoldProject(repository, name, cwd);
    } catch (error) {
      progress.fail(`Could not clone ${repository}`);
      throw error;
    }
    progress.succeed(`Created ${created.path}`);
    terminal.document({ path: created.path, template: options.url ?? template ?? DEFAULT_TEMPLATE });
    if (created.seededEnv) {
      terminal.line('Wrote .env from example.env (owner-only); fill in its secrets.');
    }
    terminal.line(`Next: cd ${name} && svc up`);
    return 0;
  }

  @Option({ flags: '-t, --template <starter>', description: `Template: ${TEMPLATE_NAMES.join(', ')} (default ${DEFAULT_TEMPLATE})` })
  parseTemplate(value: string): TemplateName {
    return oneOf(value, TEMPLATE_NAMES);
  }

  @Option({ flags: '-u, --url <repo>', description: 'Custom template repository URL' })
  parseUrl(value: string): string {
    return value;
  }
}
