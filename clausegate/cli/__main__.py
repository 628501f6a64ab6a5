from clausegate.launch import main

main()
