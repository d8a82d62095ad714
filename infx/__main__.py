from infx.cli import main

main()
