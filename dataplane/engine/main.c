/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * edgeplane-dp: the data plane.
 *
 *   edgeplane-dp -c FILE [--check]     run (or only validate) a configuration
 *   edgeplane-dp ctl ...               talk to a running instance
 *   edgeplane-dp --drop-reasons        the drop-reason list (name, description)
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ep_drop.h"
#include "engine_internal.h"

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: edgeplane-dp -c CONFIG [--check]\n"
		"       edgeplane-dp ctl [-s SOCKET] CMD [key=value ...]\n"
		"       edgeplane-dp --drop-reasons | --version\n");
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check", no_argument, NULL, 'k' },
		{ "drop-reasons", no_argument, NULL, 'd' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ep_engine_opts o = { 0 };
	int c;

	if (argc > 1 && strcmp(argv[1], "ctl") == 0)
		return ep_cli_main(argc - 1, argv + 1);
	while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': o.config = optarg; break;
		case 'k': o.check_only = true; break;
		case 'd':
			for (int r = 0; r < EP_DROP__COUNT; r++)
				printf("%s\t%s\n", ep_drop_name[r], ep_drop_desc[r]);
			return 0;
		case 'V': printf("edgeplane-dp %s\n", EP_VERSION); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (o.config == NULL || optind != argc) {
		usage(stderr);
		return 2;
	}
	return ep_engine_run(&o);
}
