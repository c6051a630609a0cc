// The `crawler` program: the command-line interface over the spiders built in (spiders/).
#include "crawler/cli/main.h"

int main(int argc, char** argv) {
  return crawler::cli::main(argc, argv);
}
