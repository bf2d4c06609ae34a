from drills.cli import main

main()
