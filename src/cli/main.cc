// tessera: one binary, one subcommand per mode (DESIGN §7).
#include "cli/commands.h"

int main(int argc, char** argv) { return tessera::cli::Run(argc, argv); }
