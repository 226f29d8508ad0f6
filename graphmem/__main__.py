from graphmem.cli import main

main()
