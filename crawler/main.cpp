// The `crawler` program: the command-line interface over the spiders built in (spiders/).
#include "crawler/commands.h"

int main(int argc, char** argv) {
  return crawler::cli::main(argc, argv);
}
