from clausegate.cli.launch import main

main()
