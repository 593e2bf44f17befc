import { join } from 'node:path';

import { Command, Option } from 'nest-commander';

import {
  BUNDLED_TEMPLATES,
  BundledTemplate,
  DEFAULT_TEMPLATE,
  isBundled,
  platformRoot,
  PROJECT_NAME,
  projectNameProblem,
  ProjectSource,
  scaffoldProject,
  splitRepositoryUrl,
  TEMPLATE_NAMES,
  TemplateName,
  TEMPLATES,
  unbundledTemplateError,
} from '@app/cli-project';
import { Terminal } from '@app/cli-terminal';

import { svcInvocation } from '../invocation';
import { JsonOptions, oneOf } from '../options';
import { SvcCommand } from '../svc-command';
import { UsageError } from '../usage-errors';

interface CreateOptions extends JsonOptions {
  template?: TemplateName;
  url?: string;
}

const DEFAULT_PROJECT_NAME = 'agent-platform';

@Command({ name: 'create', arguments: '[name]', description: 'Scaffold a project from a bundled template or a git repository' })
export class CreateCommand extends SvcCommand<CreateOptions> {
  protected async execute([givenName]: string[], options: CreateOptions, terminal: Terminal): Promise<number> {
    const cwd = process.cwd();
    let template = options.template;
    // A spec name this version does not ship fails before anything is asked or created (-u wins over -t).
    if (!options.url && template && !isBundled(template)) {
      throw unbundledTemplateError(template);
    }
    let name = givenName;
    if (name !== undefined && !PROJECT_NAME.test(name)) {
      // The name's form is a usage error; a directory already there is found when the project is made.
      throw new UsageError(projectNameProblem(name, cwd)!);
    }
    if (name === undefined) {
      if (!terminal.interactive) {
        // Required in this mode as a missing argument is: a usage error (exit 2, no JSON), before anything is made.
        throw new UsageError('A project name is required in non-interactive mode: svc create <name>');
      }
      if (!template && !options.url) {
        template = await terminal.select(
          'Template',
          BUNDLED_TEMPLATES.map((value) => ({ name: `${value}  ${TEMPLATES[value]}`, value })),
        );
      }
      name = await terminal.input('Project name', {
        default: DEFAULT_PROJECT_NAME,
        validate: (value) => projectNameProblem(value.trim(), cwd) ?? true,
      });
      name = name.trim();
    }
    const bundled = (template ?? DEFAULT_TEMPLATE) as BundledTemplate;
    const source: ProjectSource = options.url ? { repository: options.url } : { template: bundled };
    const shownUrl = options.url && splitRepositoryUrl(options.url).shown;
    const what = shownUrl ? `Cloning ${shownUrl}` : `Copying the ${bundled} template`;
    const progress = terminal.progress(what);
    let created;
    try {
      created = await scaffoldProject(source, name, cwd);
    } catch (error) {
      progress.fail(shownUrl ? `Could not clone ${shownUrl}` : `Could not copy the ${bundled} template`);
      throw error;
    }
    progress.succeed(`Created ${created.path}`);
    terminal.document({ path: created.path, template: shownUrl || bundled });
    if (created.seededEnv) {
      terminal.line('Wrote .env from example.env (owner-only); fill in its secrets.');
    }
    for (const step of nextSteps(options.url ? null : bundled, name, created.path)) {
      terminal.line(step);
    }
    return 0;
  }

  @Option({
    flags: '-t, --template <starter>',
    description:
      `Template: ${BUNDLED_TEMPLATES.join(' or ')} (default ${DEFAULT_TEMPLATE}), bundled and offline. ` +
      `${TEMPLATE_NAMES.filter((name) => !(BUNDLED_TEMPLATES as readonly string[]).includes(name)).join(', ')} are not bundled: ` +
      'give such a template as a repository with -u',
  })
  parseTemplate(value: string): TemplateName {
    return oneOf(value, TEMPLATE_NAMES);
  }

  @Option({ flags: '-u, --url <repo>', description: 'Clone this git repository instead (needs git)' })
  parseUrl(value: string): string {
    return value;
  }
}

/** What to run next, with this checkout's real paths (the project's README.md says the same at length). */
function nextSteps(template: BundledTemplate | null, name: string, path: string): string[] {
  const root = platformRoot();
  switch (template) {
    case 'platform-node':
      return [
        'Next: start the platform with your components, from the platform checkout:',
        `  cd ${root ?? '<platform checkout>'} && COMPONENTS_MODULE=${join(path, 'components.mjs')} npm start`,
        `See ${join(name, 'README.md')}.`,
      ];
    case 'platform-docker':
      return [
        'Next: build the platform image once, in the platform checkout:',
        `  cd ${root ?? '<platform checkout>'} && docker build -t platform-service:local -f docker/Dockerfile .`,
        `  fill in POSTGRES_PASSWORD and OS_SECURITY_KEY in ${join(name, '.env')}, then: cd ${name} && ${svcInvocation()} up`,
        `See ${join(name, 'README.md')}.`,
      ];
    default:
      return [`Next: cd ${name} && ${svcInvocation()} up`];
  }
}
